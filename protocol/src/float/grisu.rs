//! The digits of a double as Redis 8 writes them (`fpconv_dtoa`): Grisu2 (Florian Loitsch,
//! "Printing Floating-Point Numbers Quickly and Accurately with Integers", 2010), which reads
//! back as the same double but is not always the shortest such text: for a few doubles (53
//! of the 110,582 of float.rs's test) it gives 17 digits where 16 would do
//! (`0.44425922632217407` for the double that is also `0.4442592263221741`), or 17 where 15
//! would. Clients see these digits in every double reply of Redis
//! 8, so they are reproduced here step for step: the boundaries of the double, a cached power
//! of ten every 8 decades bringing the exponent into [-60, -32], 64-bit products rounded
//! half-up, the boundaries narrowed by one unit, digits generated until they fall within them,
//! and the last digit walked towards the double.

/// A number `f` × 2^`e`.
#[derive(Clone, Copy)]
struct Fp {
    f: u64,
    e: i32,
}

const FRAC_MASK: u64 = (1 << 52) - 1;
const HIDDEN: u64 = 1 << 52;

/// 10^k for k = -348, -340, … 340 as 64-bit significands (rounded to nearest) with their
/// binary exponents.
const POWERS: [(u64, i32); 87] = [
    (0xfa8fd5a0081c0288, -1220), // 1e-348
    (0xbaaee17fa23ebf76, -1193), // 1e-340
    (0x8b16fb203055ac76, -1166), // 1e-332
    (0xcf42894a5dce35ea, -1140), // 1e-324
    (0x9a6bb0aa55653b2d, -1113), // 1e-316
    (0xe61acf033d1a45df, -1087), // 1e-308
    (0xab70fe17c79ac6ca, -1060), // 1e-300
    (0xff77b1fcbebcdc4f, -1034), // 1e-292
    (0xbe5691ef416bd60c, -1007), // 1e-284
    (0x8dd01fad907ffc3c, -980),  // 1e-276
    (0xd3515c2831559a83, -954),  // 1e-268
    (0x9d71ac8fada6c9b5, -927),  // 1e-260
    (0xea9c227723ee8bcb, -901),  // 1e-252
    (0xaecc49914078536d, -874),  // 1e-244
    (0x823c12795db6ce57, -847),  // 1e-236
    (0xc21094364dfb5637, -821),  // 1e-228
    (0x9096ea6f3848984f, -794),  // 1e-220
    (0xd77485cb25823ac7, -768),  // 1e-212
    (0xa086cfcd97bf97f4, -741),  // 1e-204
    (0xef340a98172aace5, -715),  // 1e-196
    (0xb23867fb2a35b28e, -688),  // 1e-188
    (0x84c8d4dfd2c63f3b, -661),  // 1e-180
    (0xc5dd44271ad3cdba, -635),  // 1e-172
    (0x936b9fcebb25c996, -608),  // 1e-164
    (0xdbac6c247d62a584, -582),  // 1e-156
    (0xa3ab66580d5fdaf6, -555),  // 1e-148
    (0xf3e2f893dec3f126, -529),  // 1e-140
    (0xb5b5ada8aaff80b8, -502),  // 1e-132
    (0x87625f056c7c4a8b, -475),  // 1e-124
    (0xc9bcff6034c13053, -449),  // 1e-116
    (0x964e858c91ba2655, -422),  // 1e-108
    (0xdff9772470297ebd, -396),  // 1e-100
    (0xa6dfbd9fb8e5b88f, -369),  // 1e-92
    (0xf8a95fcf88747d94, -343),  // 1e-84
    (0xb94470938fa89bcf, -316),  // 1e-76
    (0x8a08f0f8bf0f156b, -289),  // 1e-68
    (0xcdb02555653131b6, -263),  // 1e-60
    (0x993fe2c6d07b7fac, -236),  // 1e-52
    (0xe45c10c42a2b3b06, -210),  // 1e-44
    (0xaa242499697392d3, -183),  // 1e-36
    (0xfd87b5f28300ca0e, -157),  // 1e-28
    (0xbce5086492111aeb, -130),  // 1e-20
    (0x8cbccc096f5088cc, -103),  // 1e-12
    (0xd1b71758e219652c, -77),   // 1e-4
    (0x9c40000000000000, -50),   // 1e4
    (0xe8d4a51000000000, -24),   // 1e12
    (0xad78ebc5ac620000, 3),     // 1e20
    (0x813f3978f8940984, 30),    // 1e28
    (0xc097ce7bc90715b3, 56),    // 1e36
    (0x8f7e32ce7bea5c70, 83),    // 1e44
    (0xd5d238a4abe98068, 109),   // 1e52
    (0x9f4f2726179a2245, 136),   // 1e60
    (0xed63a231d4c4fb27, 162),   // 1e68
    (0xb0de65388cc8ada8, 189),   // 1e76
    (0x83c7088e1aab65db, 216),   // 1e84
    (0xc45d1df942711d9a, 242),   // 1e92
    (0x924d692ca61be758, 269),   // 1e100
    (0xda01ee641a708dea, 295),   // 1e108
    (0xa26da3999aef774a, 322),   // 1e116
    (0xf209787bb47d6b85, 348),   // 1e124
    (0xb454e4a179dd1877, 375),   // 1e132
    (0x865b86925b9bc5c2, 402),   // 1e140
    (0xc83553c5c8965d3d, 428),   // 1e148
    (0x952ab45cfa97a0b3, 455),   // 1e156
    (0xde469fbd99a05fe3, 481),   // 1e164
    (0xa59bc234db398c25, 508),   // 1e172
    (0xf6c69a72a3989f5c, 534),   // 1e180
    (0xb7dcbf5354e9bece, 561),   // 1e188
    (0x88fcf317f22241e2, 588),   // 1e196
    (0xcc20ce9bd35c78a5, 614),   // 1e204
    (0x98165af37b2153df, 641),   // 1e212
    (0xe2a0b5dc971f303a, 667),   // 1e220
    (0xa8d9d1535ce3b396, 694),   // 1e228
    (0xfb9b7cd9a4a7443c, 720),   // 1e236
    (0xbb764c4ca7a44410, 747),   // 1e244
    (0x8bab8eefb6409c1a, 774),   // 1e252
    (0xd01fef10a657842c, 800),   // 1e260
    (0x9b10a4e5e9913129, 827),   // 1e268
    (0xe7109bfba19c0c9d, 853),   // 1e276
    (0xac2820d9623bf429, 880),   // 1e284
    (0x80444b5e7aa7cf85, 907),   // 1e292
    (0xbf21e44003acdd2d, 933),   // 1e300
    (0x8e679c2f5e44ff8f, 960),   // 1e308
    (0xd433179d9c8cb841, 986),   // 1e316
    (0x9e19db92b4e31ba9, 1013),  // 1e324
    (0xeb96bf6ebadf77d9, 1039),  // 1e332
    (0xaf87023b9bf0ee6b, 1066),  // 1e340
];
const FIRST_POWER: i32 = -348;
const POWER_STEP: i32 = 8;

fn normalize(mut x: Fp) -> Fp {
    let shift = x.f.leading_zeros();
    x.f <<= shift;
    x.e -= shift as i32;
    x
}

/// The double's exact value and the two halfway points to its neighbours (the lower one on
/// the upper one's scale), the upper one normalised.
fn boundaries(v: f64) -> (Fp, Fp, Fp) {
    let bits = v.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let w = if biased == 0 {
        Fp {
            f: bits & FRAC_MASK,
            e: -1074,
        }
    } else {
        Fp {
            f: (bits & FRAC_MASK) + HIDDEN,
            e: biased - 1075,
        }
    };
    let upper = normalize(Fp {
        f: (w.f << 1) + 1,
        e: w.e - 1,
    });
    // The gap below is half as wide where the significand is a power of two.
    let l_shift = if w.f == HIDDEN { 2 } else { 1 };
    let lower = Fp {
        f: ((w.f << l_shift) - 1) << ((w.e - l_shift) - upper.e),
        e: upper.e,
    };
    (normalize(w), lower, upper)
}

/// The cached power of ten that brings a number of binary exponent `e` (64-bit significand)
/// into the exponent range [-60, -32], and its decimal exponent.
fn cached_power(e: i32) -> (Fp, i32) {
    let approx = (-(e + 87) as f64 * 0.30102999566398114) as i32;
    let mut i = ((approx - FIRST_POWER) / POWER_STEP) as usize;
    loop {
        let (f, pe) = POWERS[i];
        let scaled = e + pe + 64;
        if scaled < -60 {
            i += 1;
        } else if scaled > -32 {
            i -= 1;
        } else {
            return (Fp { f, e: pe }, FIRST_POWER + i as i32 * POWER_STEP);
        }
    }
}

/// The upper 64 bits of the 128-bit product, rounded half-up from the 32 bits below them.
fn multiply(a: Fp, b: Fp) -> Fp {
    const LO: u64 = 0xffff_ffff;
    let (ah, al, bh, bl) = (a.f >> 32, a.f & LO, b.f >> 32, b.f & LO);
    let (ah_bl, al_bh, al_bl, ah_bh) = (ah * bl, al * bh, al * bl, ah * bh);
    let mid = (ah_bl & LO) + (al_bh & LO) + (al_bl >> 32) + (1 << 31);
    Fp {
        f: ah_bh + (ah_bl >> 32) + (al_bh >> 32) + (mid >> 32),
        e: a.e + b.e + 64,
    }
}

/// Moves the last digit down while the text stays within the boundaries and gets nearer the
/// double (`rest`: what is left above the digits, `unit`: one unit of the last digit, `gap`:
/// the distance from the upper boundary to the double, all on one scale).
fn round_last(digits: &mut [u8], delta: u64, mut rest: u64, unit: u64, gap: u64) {
    while rest < gap
        && delta.wrapping_sub(rest) >= unit
        && (rest.wrapping_add(unit) < gap
            || gap.wrapping_sub(rest) > rest.wrapping_add(unit).wrapping_sub(gap))
    {
        if let Some(last) = digits.last_mut() {
            *last -= 1;
        }
        rest = rest.wrapping_add(unit);
    }
}

/// The digits of a finite, non-zero, positive `v` and the power of ten of the last one:
/// `v` ≈ digits × 10^exponent.
pub(super) fn digits(v: f64) -> (Vec<u8>, i32) {
    let (w, lower, upper) = boundaries(v);
    let (power, k) = cached_power(upper.e);
    let w = multiply(w, power);
    let mut upper = multiply(upper, power);
    let mut lower = multiply(lower, power);
    lower.f += 1;
    upper.f -= 1;
    let mut exponent = -k;

    let gap = upper.f - w.f;
    let mut delta = upper.f - lower.f;
    let shift = (-upper.e) as u32;
    let one = 1u64 << shift;
    let mut integral = upper.f >> shift;
    let mut fraction = upper.f & (one - 1);
    let mut out = Vec::with_capacity(18);
    // The integral part, from the 10^9 digit down.
    let mut kappa = 10;
    let mut divisor = 1_000_000_000u64;
    while kappa > 0 {
        let digit = integral / divisor;
        if digit != 0 || !out.is_empty() {
            out.push(b'0' + digit as u8);
        }
        integral -= digit * divisor;
        kappa -= 1;
        let rest = (integral << shift) + fraction;
        if rest <= delta {
            exponent += kappa;
            round_last(&mut out, delta, rest, divisor << shift, gap);
            return (out, exponent);
        }
        divisor /= 10;
    }
    // The fraction, one digit at a time.
    let mut scale = 10u64;
    loop {
        fraction = fraction.wrapping_mul(10);
        delta = delta.wrapping_mul(10);
        kappa -= 1;
        let digit = fraction >> shift;
        if digit != 0 || !out.is_empty() {
            out.push(b'0' + digit as u8);
        }
        fraction &= one - 1;
        if fraction < delta {
            exponent += kappa;
            round_last(&mut out, delta, fraction, one, gap.wrapping_mul(scale));
            return (out, exponent);
        }
        scale = scale.wrapping_mul(10);
    }
}
