//! [`Clock`]: the one source of time for everything time-related in a server — TTLs, TIME,
//! OBJECT IDLETIME, blocking timeouts, CLIENT PAUSE, the active expiry cycle.
//!
//! A server runs on the system clock unless it was built with another one. A test can build a
//! server on a clock it controls: frozen at a chosen instant and moved forward with
//! [`Clock::advance`], set to any time, or running at a different rate or offset from real time
//! (how one node of five drifts in a Redlock test). A frozen clock keeps its rate too
//! ([`Clock::rate`]): `advance` itself moves it by exactly the duration given, but a harness that
//! lets simulated real time pass over several clocks (the facade's `Nodes::advance`) moves each
//! by the duration times its rate, so a node set to run 5% fast drifts while time is frozen. Every change notifies the server, which runs
//! its expiry cycle and blocked-client timeouts at once on the new time, so advancing a clock past a
//! lease expires the key for every client without anyone sleeping.
//!
//! [`Stopwatch`] is the other kind of time: how long a command ran (INFO commandstats, latency
//! histograms, SLOWLOG, LATENCY), always real time. It is read twice per command, so it reads the
//! CPU's time-stamp counter where the kernel says that counter is invariant (`constant_tsc` and
//! `nonstop_tsc`): 9 ns a read here against 22 ns for `Instant::now` (a vDSO call). Elsewhere it
//! falls back to `Instant`. The system clock, read at every command as in Redis, goes through the
//! same counter when it can: read for real at most once a millisecond per thread.
//!
//! The executor reads the clock once per command (or per MULTI/EXEC or script) and keeps that
//! value for the whole command, as Redis does, so a command never sees time move under it.

use parking_lot::Mutex;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A shareable handle to a clock; clones see and control the same time.
#[derive(Clone)]
pub struct Clock {
    inner: Arc<Inner>,
}

struct Inner {
    /// `None` for the plain system clock (read without locking).
    controlled: Option<Mutex<Controlled>>,
    listeners: Mutex<Vec<Arc<dyn Fn() + Send + Sync>>>,
}

/// Virtual time = `virtual_anchor + rate × (real now − real_anchor) + offset`, or
/// `virtual_anchor + offset` when frozen. The offset is kept apart from the anchor so that a skew
/// can be read back and undone (`set_offset(0)`) whatever happened to the clock meanwhile.
#[derive(Debug, Clone, Copy)]
struct Controlled {
    frozen: bool,
    rate: f64,
    real_anchor_us: i64,
    virtual_anchor_us: i64,
    offset_us: i64,
}

impl Controlled {
    fn now_us(&self, real_us: i64) -> i64 {
        self.unskewed_us(real_us) + self.offset_us
    }

    /// The time without the offset.
    fn unskewed_us(&self, real_us: i64) -> i64 {
        if self.frozen {
            self.virtual_anchor_us
        } else {
            let elapsed = (real_us - self.real_anchor_us) as f64 * self.rate;
            self.virtual_anchor_us + elapsed as i64
        }
    }

    /// Re-anchors at the current instant so that a change of mode or rate starts from here.
    fn reanchor(&mut self, real_us: i64) {
        self.virtual_anchor_us = self.unskewed_us(real_us);
        self.real_anchor_us = real_us;
    }
}

fn real_now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

fn to_us(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_micros() as i64,
        Err(e) => -(e.duration().as_micros() as i64),
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner.controlled {
            None => write!(f, "Clock(system)"),
            Some(c) => write!(f, "Clock({:?})", *c.lock()),
        }
    }
}

impl Clock {
    /// Real time.
    pub fn system() -> Self {
        Clock {
            inner: Arc::new(Inner {
                controlled: None,
                listeners: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A clock that starts at real time and can then be controlled (frozen, advanced, skewed).
    pub fn controllable() -> Self {
        Self::controlled(Controlled {
            frozen: false,
            rate: 1.0,
            real_anchor_us: real_now_us(),
            virtual_anchor_us: real_now_us(),
            offset_us: 0,
        })
    }

    /// A clock frozen at `at`: time moves only when told to.
    pub fn frozen_at(at: SystemTime) -> Self {
        Self::controlled(Controlled {
            frozen: true,
            rate: 1.0,
            real_anchor_us: real_now_us(),
            virtual_anchor_us: to_us(at),
            offset_us: 0,
        })
    }

    /// A clock frozen at the current real time.
    pub fn manual() -> Self {
        Self::frozen_at(SystemTime::now())
    }

    fn controlled(c: Controlled) -> Self {
        Clock {
            inner: Arc::new(Inner {
                controlled: Some(Mutex::new(c)),
                listeners: Mutex::new(Vec::new()),
            }),
        }
    }

    /// True for a clock that tests can move.
    pub fn is_controllable(&self) -> bool {
        self.inner.controlled.is_some()
    }

    /// Microseconds since the UNIX epoch.
    pub fn now_us(&self) -> i64 {
        match &self.inner.controlled {
            None => system_now_us_fast(),
            Some(c) => c.lock().now_us(real_now_us()),
        }
    }

    /// Milliseconds since the UNIX epoch.
    pub fn now_ms(&self) -> i64 {
        self.now_us().div_euclid(1000)
    }

    /// The current time as a `SystemTime`.
    pub fn now(&self) -> SystemTime {
        let us = self.now_us();
        if us >= 0 {
            UNIX_EPOCH + Duration::from_micros(us as u64)
        } else {
            UNIX_EPOCH - Duration::from_micros(us.unsigned_abs())
        }
    }

    /// Moves a controllable clock forward by exactly `by`, whatever its rate. Returns false on the
    /// system clock.
    pub fn advance(&self, by: Duration) -> bool {
        self.update(|c, _| c.virtual_anchor_us += by.as_micros() as i64)
    }

    /// Sets a controllable clock to `to` (it keeps running, or stays frozen, from there). The
    /// clock reads `to` afterwards, its offset included: the offset stays as it was.
    pub fn set(&self, to: SystemTime) -> bool {
        self.update(|c, real| {
            c.real_anchor_us = real;
            c.virtual_anchor_us = to_us(to) - c.offset_us;
        })
    }

    /// Stops a controllable clock at its current time.
    pub fn freeze(&self) -> bool {
        self.update(|c, real| {
            c.reanchor(real);
            c.frozen = true;
        })
    }

    /// Lets a frozen clock run again from where it stopped.
    pub fn resume(&self) -> bool {
        self.update(|c, real| {
            c.real_anchor_us = real;
            c.frozen = false;
        })
    }

    /// Makes a controllable clock run `rate` times as fast as real time (1.0 = normal). A frozen
    /// clock keeps the rate for when it resumes, and for whoever reads it with [`Clock::rate`] to
    /// scale the time it advances the clock by (the facade's `Nodes::advance` does).
    pub fn set_rate(&self, rate: f64) -> bool {
        self.update(|c, real| {
            c.reanchor(real);
            c.rate = rate;
        })
    }

    /// The rate set by [`Clock::set_rate`] (1.0 unless changed; 1.0 for the system clock).
    pub fn rate(&self) -> f64 {
        match &self.inner.controlled {
            None => 1.0,
            Some(c) => c.lock().rate,
        }
    }

    /// Skews a controllable clock: from now on it reads `offset_ms` milliseconds ahead of
    /// (negative: behind) the time it would read without a skew. The offset replaces the previous
    /// one rather than adding to it, so `set_offset(0)` undoes any skew; advancing, freezing and
    /// rates apply beneath it. This is how one server of several runs ahead of the others while
    /// a test moves all their clocks together. Setting it moves the clock at once (backwards
    /// too), and keys that the new time expires are expired for every client.
    pub fn set_offset(&self, offset_ms: i64) -> bool {
        self.update(|c, _| c.offset_us = offset_ms.saturating_mul(1000))
    }

    /// Shorthand for [`Clock::set_offset`]: `by` ahead of the unskewed time, or behind it.
    pub fn skew(&self, by: Duration, ahead: bool) -> bool {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.set_offset(if ahead { ms } else { -ms })
    }

    /// The current offset in milliseconds (see [`Clock::set_offset`]); 0 for the system clock.
    pub fn offset_ms(&self) -> i64 {
        match &self.inner.controlled {
            None => 0,
            Some(c) => c.lock().offset_us.div_euclid(1000),
        }
    }

    fn update(&self, change: impl FnOnce(&mut Controlled, i64)) -> bool {
        let Some(controlled) = &self.inner.controlled else {
            return false;
        };
        change(&mut controlled.lock(), real_now_us());
        self.notify();
        true
    }

    /// Registers `listener`, called after every change made through this clock's controls.
    /// The server uses it to run expiry and timeouts at once on the new time.
    pub fn on_change(&self, listener: Arc<dyn Fn() + Send + Sync>) {
        self.inner.listeners.lock().push(listener);
    }

    fn notify(&self) {
        let listeners = self.inner.listeners.lock().clone();
        for listener in listeners {
            listener();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn frozen_clock_moves_only_when_told() {
        let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let clock = Clock::frozen_at(start);
        assert_eq!(clock.now_ms(), 1_700_000_000_000);
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(clock.now_ms(), 1_700_000_000_000);
        clock.advance(Duration::from_millis(1500));
        assert_eq!(clock.now_ms(), 1_700_000_001_500);
        clock.set(UNIX_EPOCH + Duration::from_secs(10));
        assert_eq!(clock.now_ms(), 10_000);
    }

    #[test]
    fn rate_and_resume() {
        let clock = Clock::frozen_at(UNIX_EPOCH + Duration::from_secs(100));
        clock.set_rate(1000.0);
        clock.resume();
        std::thread::sleep(Duration::from_millis(5));
        // 5 ms of real time at 1000x is at least 5 s of clock time.
        assert!(clock.now_ms() >= 105_000);
        clock.freeze();
        let frozen = clock.now_ms();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(clock.now_ms(), frozen);
    }

    #[test]
    fn offset_is_kept_apart_from_advances_and_can_be_undone() {
        let clock = Clock::frozen_at(UNIX_EPOCH + Duration::from_secs(100));
        assert!(clock.set_offset(250));
        assert_eq!(clock.now_ms(), 100_250);
        clock.advance(Duration::from_millis(1000));
        assert_eq!(clock.now_ms(), 101_250);
        assert_eq!(clock.offset_ms(), 250);
        clock.skew(Duration::from_millis(40), false);
        assert_eq!(clock.now_ms(), 100_960);
        clock.set(UNIX_EPOCH + Duration::from_secs(200));
        assert_eq!(clock.now_ms(), 200_000);
        clock.set_offset(0);
        assert_eq!(clock.now_ms(), 200_040);
        assert_eq!(clock.rate(), 1.0);
        clock.set_rate(2.0);
        assert_eq!(clock.now_ms(), 200_040, "a change of rate does not jump");
        assert_eq!(clock.rate(), 2.0);
        clock.advance(Duration::from_millis(10));
        assert_eq!(clock.now_ms(), 200_050, "advance ignores the rate");
        assert_eq!(Clock::system().rate(), 1.0);
        assert!(!Clock::system().set_offset(5));
    }

    #[test]
    fn system_clock_is_not_controllable_and_listeners_hear_changes() {
        let system = Clock::system();
        assert!(!system.advance(Duration::from_secs(1)));
        let clock = Clock::manual();
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        clock.on_change(Arc::new(move || {
            seen.fetch_add(1, Ordering::SeqCst);
        }));
        clock.advance(Duration::from_secs(1));
        clock.freeze();
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }
}

/// The system clock in microseconds, read every command: where stopwatches use the time-stamp
/// counter, each thread reads the system clock at most once a millisecond and adds the counter's
/// progress since (9 ns instead of a 22 ns vDSO call). The counter's rate is measured to within
/// about 1e-4, so between two readings the derived time is off by at most a tenth of a
/// microsecond, and a step of the system clock (settimeofday, an NTP step) is seen within 1 ms.
#[inline]
fn system_now_us_fast() -> i64 {
    thread_local! {
        /// (system time in µs, counter at that reading); a counter of 0 means never read.
        static ANCHOR: std::cell::Cell<(i64, u64)> = const { std::cell::Cell::new((0, 0)) };
    }
    let Some(Some(per_us)) = TSC_TICKS_PER_US.get() else {
        return real_now_us();
    };
    let tsc = read_tsc();
    ANCHOR.with(|anchor| {
        let (wall, at) = anchor.get();
        let ticks = tsc.wrapping_sub(at);
        if at != 0 && (ticks as f64) < per_us * 1000.0 {
            return wall + (ticks as f64 / per_us) as i64;
        }
        let wall = real_now_us();
        anchor.set((wall, tsc));
        wall
    })
}

/// Times a command in microseconds of real time (see the module documentation).
#[derive(Clone, Copy)]
pub struct Stopwatch {
    /// Time-stamp counter ticks, or nanoseconds since [`fallback_epoch`].
    start: u64,
    tsc: bool,
}

/// Time-stamp counter ticks per microsecond, when the counter is usable.
static TSC_TICKS_PER_US: std::sync::OnceLock<Option<f64>> = std::sync::OnceLock::new();

impl Stopwatch {
    #[inline]
    pub fn start() -> Self {
        match TSC_TICKS_PER_US.get() {
            Some(Some(_)) => Stopwatch {
                start: read_tsc(),
                tsc: true,
            },
            _ => Stopwatch {
                start: fallback_epoch().elapsed().as_nanos() as u64,
                tsc: false,
            },
        }
    }

    /// Microseconds since [`Stopwatch::start`].
    #[inline]
    pub fn elapsed_us(self) -> u64 {
        if self.tsc {
            let per_us = TSC_TICKS_PER_US.get().copied().flatten().unwrap_or(1.0);
            (read_tsc().saturating_sub(self.start) as f64 / per_us) as u64
        } else {
            (fallback_epoch().elapsed().as_nanos() as u64).saturating_sub(self.start) / 1000
        }
    }

    /// Decides once per process whether stopwatches read the time-stamp counter, measuring its
    /// rate against the monotonic clock over 2 ms. Servers call it when they start; until then
    /// (and where the counter is not invariant) stopwatches use `Instant`.
    pub fn calibrate() {
        TSC_TICKS_PER_US.get_or_init(measure_tsc);
    }
}

fn fallback_epoch() -> std::time::Instant {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(std::time::Instant::now)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read_tsc() -> u64 {
    // SAFETY: RDTSC exists on every x86_64 CPU and has no preconditions.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn read_tsc() -> u64 {
    0
}

fn measure_tsc() -> Option<f64> {
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let flags = cpuinfo.lines().find(|l| l.starts_with("flags"))?;
    let has = |flag: &str| flags.split_whitespace().any(|f| f == flag);
    if !has("constant_tsc") || !has("nonstop_tsc") {
        return None;
    }
    let (t0, c0) = (std::time::Instant::now(), read_tsc());
    while t0.elapsed() < Duration::from_millis(2) {
        std::hint::spin_loop();
    }
    let (elapsed, c1) = (t0.elapsed(), read_tsc());
    let per_us = c1.checked_sub(c0)? as f64 / (elapsed.as_nanos() as f64 / 1000.0);
    // A counter that did not move at a plausible rate (100 MHz to 10 GHz) is not trusted.
    (100.0..10_000.0).contains(&per_us).then_some(per_us)
}

#[cfg(test)]
mod stopwatch_tests {
    use super::*;

    /// The system clock read through the counter stays within a millisecond of the system
    /// clock itself.
    #[test]
    fn the_fast_system_clock_follows_the_system_clock() {
        Stopwatch::calibrate();
        for _ in 0..50 {
            let (ours, theirs) = (system_now_us_fast(), real_now_us());
            // A millisecond: a loaded machine may preempt the test between the two reads.
            assert!((theirs - ours).abs() < 1000, "{ours} vs {theirs}");
            std::thread::sleep(Duration::from_micros(300));
        }
    }

    /// A stopwatch agrees with `Instant` over a 20 ms sleep, on the counter or without it.
    #[test]
    fn stopwatch_measures_real_time() {
        Stopwatch::calibrate();
        let (watch, t0) = (Stopwatch::start(), std::time::Instant::now());
        std::thread::sleep(Duration::from_millis(20));
        let (ours, theirs) = (watch.elapsed_us(), t0.elapsed().as_micros() as u64);
        assert!(ours >= 20_000, "{ours} us");
        assert!(
            ours.abs_diff(theirs) < theirs / 20 + 200,
            "{ours} vs {theirs} us"
        );
    }
}
