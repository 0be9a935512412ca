//! What LATENCY reports: the latency monitor's events and each command's latency histogram.
//!
//! The monitor ([`LatencyMonitor`]) keeps, per event class (`command`, `fast-command`,
//! `expire-cycle`…), the samples at or above `latency-monitor-threshold` milliseconds: one per
//! second (a second sample in the same second keeps the larger), the last 160, and the largest
//! ever — Redis's `latency.c` model, which LATENCY LATEST / HISTORY / RESET / GRAPH / DOCTOR read.
//! A threshold of 0 turns it off, and then nothing is recorded.
//!
//! [`LatencyHistogram`] is a command's distribution of run times for LATENCY HISTOGRAM and INFO
//! latencystats: an HdrHistogram as Redis keeps (1 ns to 1 s, two significant digits, the run
//! time recorded as µs × 1000), reported by powers of two from 1,024 ns — keys 1, 2, 4, 8, 16,
//! 33, 66, 132… µs — and at percentiles, as Redis reports them.

use hdrhistogram::Histogram;
use std::collections::{BTreeMap, VecDeque};

/// Samples kept per event (Redis's `LATENCY_TS_LEN`).
pub const HISTORY_LEN: usize = 160;

/// The range a [`LatencyHistogram`] tracks (Redis's `LATENCY_HISTOGRAM_MIN_VALUE` / `MAX_VALUE`).
const MIN_NS: u64 = 1;
const MAX_NS: u64 = 1_000_000_000;

/// One sample of an event: when (UNIX seconds) and how long (milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub time: i64,
    pub latency_ms: u64,
}

/// The samples of one event class.
#[derive(Debug, Clone, Default)]
pub struct EventHistory {
    pub samples: VecDeque<Sample>,
    /// The largest latency ever recorded for the event (since its last reset).
    pub max_ms: u64,
}

/// The latency monitor's events, by name.
#[derive(Debug, Default)]
pub struct LatencyMonitor {
    pub events: BTreeMap<&'static str, EventHistory>,
}

impl LatencyMonitor {
    /// Records `latency_ms` for `event` if monitoring is on (`threshold_ms` > 0) and the latency
    /// reaches the threshold (Redis's `latencyAddSampleIfNeeded`).
    #[inline]
    pub fn add_if_needed(
        &mut self,
        event: &'static str,
        latency_ms: u64,
        threshold_ms: u64,
        now_s: i64,
    ) {
        if threshold_ms > 0 && latency_ms >= threshold_ms {
            self.add(event, latency_ms, now_s);
        }
    }

    fn add(&mut self, event: &'static str, latency_ms: u64, now_s: i64) {
        let history = self.events.entry(event).or_default();
        history.max_ms = history.max_ms.max(latency_ms);
        if let Some(last) = history.samples.back_mut() {
            if last.time == now_s {
                last.latency_ms = last.latency_ms.max(latency_ms);
                return;
            }
        }
        if history.samples.len() == HISTORY_LEN {
            history.samples.pop_front();
        }
        history.samples.push_back(Sample {
            time: now_s,
            latency_ms,
        });
    }

    /// Forgets the named events (all of them when `names` is empty); returns how many there were.
    pub fn reset(&mut self, names: &[&[u8]]) -> usize {
        if names.is_empty() {
            let n = self.events.len();
            self.events.clear();
            return n;
        }
        let mut removed = 0;
        for name in names {
            let found = self.events.keys().find(|k| k.as_bytes() == *name).copied();
            if let Some(key) = found {
                self.events.remove(key);
                removed += 1;
            }
        }
        removed
    }

    /// The history of the event named `name`, if it has samples.
    pub fn get(&self, name: &[u8]) -> Option<(&'static str, &EventHistory)> {
        self.events
            .iter()
            .find(|(k, _)| k.as_bytes() == name)
            .map(|(k, v)| (*k, v))
    }
}

/// A command's run times, for LATENCY HISTOGRAM and INFO latencystats (see the module
/// documentation). Runs under [`FAST_USEC`] µs — nearly all of them — are only counted per
/// microsecond on the command's path, and folded into the HdrHistogram when it is read; longer
/// ones go into it at once (allocated at the first, as Redis allocates its histogram).
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    fast: [u64; FAST_USEC],
    histogram: Option<Box<Histogram<u64>>>,
}

/// Run times counted per microsecond before they reach the HdrHistogram.
pub const FAST_USEC: usize = 64;

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            fast: [0; FAST_USEC],
            histogram: None,
        }
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(MIN_NS, MAX_NS, 2).expect("valid bounds")
}

/// What Redis records for a run of `usec` µs: µs × 1000 ns, clamped to 1 ns – 1 s.
fn recorded_ns(usec: u64) -> u64 {
    usec.saturating_mul(1000).clamp(MIN_NS, MAX_NS)
}

impl LatencyHistogram {
    /// Records one run of `usec` microseconds.
    #[inline]
    pub fn record(&mut self, usec: u64) {
        match self.fast.get_mut(usec as usize) {
            Some(count) => *count += 1,
            None => self.record_slow(usec),
        }
    }

    #[cold]
    fn record_slow(&mut self, usec: u64) {
        self.histogram
            .get_or_insert_with(|| Box::new(new_histogram()))
            .saturating_record(recorded_ns(usec));
    }

    /// How many runs were recorded.
    pub fn count(&self) -> u64 {
        self.fast.iter().sum::<u64>() + self.histogram.as_ref().map_or(0, |h| h.len())
    }

    /// Every run recorded, in one HdrHistogram (`None` before the first).
    fn merged(&self) -> Option<Histogram<u64>> {
        if self.count() == 0 {
            return None;
        }
        let mut h = match &self.histogram {
            Some(h) => (**h).clone(),
            None => new_histogram(),
        };
        for (usec, &n) in self.fast.iter().enumerate() {
            if n > 0 {
                h.saturating_record_n(recorded_ns(usec as u64), n);
            }
        }
        Some(h)
    }

    /// The cumulative distribution as Redis replies it: from 1,024 ns by powers of two, (each
    /// step's highest equivalent value in µs, runs at or below it), for the steps that added runs.
    pub fn cdf(&self) -> Vec<(u64, u64)> {
        let Some(h) = self.merged() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut cumulative = 0;
        for step in h.iter_log(1024, 2.0) {
            let added = step.count_since_last_iteration();
            if added > 0 {
                cumulative += added;
                // The step ends below its reporting level (1,024·2^k ns); Redis names the step
                // by the level's highest equivalent value.
                let level = step.value_iterated_to() + 1;
                out.push((h.highest_equivalent(level) / 1000, cumulative));
            }
        }
        out
    }

    /// The run times at `percentiles` (0–100) in µs, as INFO latencystats prints them.
    pub fn percentiles_usec(&self, percentiles: &[f64]) -> Vec<f64> {
        let h = self.merged();
        percentiles
            .iter()
            .map(|p| {
                h.as_ref()
                    .map_or(0.0, |h| h.value_at_quantile(p / 100.0) as f64 / 1000.0)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_read_as_redis_reports_them() {
        let mut h = LatencyHistogram::default();
        for usec in [0, 1, 1, 2, 16, 17, 100, 1000, 1_000_000, u64::MAX] {
            h.record(usec);
        }
        // 0 and 1 µs -> 1; 2 µs (2,000 ns) -> 2; 16 µs -> 16; 17 µs (17,000 > 16,511) -> 33;
        // 100 µs -> 132; 1 ms -> 1,056 (1,056,767 ns); 1 s and beyond (clamped) -> 1,082,130.
        assert_eq!(
            h.cdf(),
            vec![
                (1, 3),
                (2, 4),
                (16, 5),
                (33, 6),
                (132, 7),
                (1056, 8),
                (1082130, 10)
            ]
        );
        assert_eq!(h.count(), 10);
        // Percentiles are highest equivalent values: 6 µs = 6,000 ns -> 6,015 ns (32 ns steps).
        let mut h = LatencyHistogram::default();
        assert_eq!(h.percentiles_usec(&[50.0]), [0.0]);
        h.record(6);
        assert_eq!(h.percentiles_usec(&[50.0, 99.9]), [6.015, 6.015]);
        // The fast counts and the HdrHistogram's own runs make one distribution.
        h.record(6);
        h.record(500);
        assert_eq!(h.count(), 3);
        assert_eq!(h.percentiles_usec(&[50.0, 100.0]), [6.015, 501.759]);
        assert_eq!(h.cdf(), vec![(8, 2), (528, 3)]);
    }

    #[test]
    fn monitor_keeps_one_sample_per_second_and_the_max() {
        let mut m = LatencyMonitor::default();
        m.add_if_needed("command", 5, 0, 100);
        assert!(m.events.is_empty(), "threshold 0: monitoring off");
        m.add_if_needed("command", 5, 10, 100);
        assert!(m.events.is_empty(), "below the threshold");
        m.add_if_needed("command", 300, 200, 100);
        m.add_if_needed("command", 250, 200, 100);
        m.add_if_needed("command", 400, 200, 101);
        let (_, history) = m.get(b"command").unwrap();
        assert_eq!(
            history.samples.iter().copied().collect::<Vec<_>>(),
            [
                Sample {
                    time: 100,
                    latency_ms: 300
                },
                Sample {
                    time: 101,
                    latency_ms: 400
                }
            ]
        );
        assert_eq!(history.max_ms, 400);
        for t in 0..200 {
            m.add_if_needed("expire-cycle", 30, 20, t);
        }
        assert_eq!(m.get(b"expire-cycle").unwrap().1.samples.len(), HISTORY_LEN);
        assert_eq!(m.reset(&[b"nosuch", b"command"]), 1);
        assert_eq!(m.reset(&[]), 1);
        assert!(m.events.is_empty());
    }
}
