//! The keys the hash tables of one thread hash with: random by default, or derived from a seed so
//! that a server's random choices can be reproduced.
//!
//! Which member SPOP pops or which key RANDOMKEY returns depends on two things: the random numbers
//! drawn, and where each entry sits in its hash table, which the hash function's keys decide. A
//! server built with a seed seeds its random numbers with it, and calls [`seed_this_thread`] on
//! each thread that creates its data (every server runs its engine on threads of its own), so that
//! the same commands give the same tables and the same choices, run after run. Without a seed each
//! table gets random keys, as Redis's per-process random hash seed protects its tables from inputs
//! chosen to collide.

use std::cell::Cell;

thread_local! {
    static SEED: Cell<Option<u64>> = const { Cell::new(None) };
}

/// From now on, hash tables created on this thread hash with keys derived from `seed`, or with
/// random keys again if `seed` is `None`.
pub fn seed_this_thread(seed: Option<u64>) {
    SEED.with(|s| s.set(seed));
}

/// The hasher for a new hash table (see the module documentation).
pub fn random_state() -> ahash::RandomState {
    match SEED.with(Cell::get) {
        None => ahash::RandomState::new(),
        Some(seed) => {
            let mut state = seed;
            let mut next = || splitmix64(&mut state);
            ahash::RandomState::with_seeds(next(), next(), next(), next())
        }
    }
}

/// SplitMix64: spreads one seed over the four hasher keys.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash_of(state: &ahash::RandomState) -> u64 {
        state.hash_one(b"member:42")
    }

    #[test]
    fn a_seeded_thread_hashes_alike_and_unseeded_tables_differ() {
        seed_this_thread(Some(7));
        let a = hash_of(&random_state());
        assert_eq!(hash_of(&random_state()), a, "same seed, same keys");
        seed_this_thread(Some(8));
        assert_ne!(hash_of(&random_state()), a, "another seed, other keys");
        seed_this_thread(None);
        assert_ne!(
            hash_of(&random_state()),
            hash_of(&random_state()),
            "no seed: random keys per table"
        );
    }
}
