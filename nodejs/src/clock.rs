//! `NativeClock`: a server's clock, the Rust API's `embedis::Clock`; `index.js`'s `Clock`
//! wraps it, turning "cannot move the system clock" answers into errors. Durations are
//! milliseconds.

use crate::convert::millis;

use napi_derive::napi;

#[napi]
pub struct NativeClock {
    pub(crate) inner: embedis::Clock,
}

#[napi]
impl NativeClock {
    /// A clock frozen at the current real time: it moves only when told to.
    #[napi(factory)]
    pub fn manual() -> NativeClock {
        NativeClock {
            inner: embedis::Clock::manual(),
        }
    }

    /// A clock that runs with real time until a test freezes, moves or skews it.
    #[napi(factory)]
    pub fn controllable() -> NativeClock {
        NativeClock {
            inner: embedis::Clock::controllable(),
        }
    }

    #[napi]
    pub fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }

    #[napi]
    pub fn now_us(&self) -> i64 {
        self.inner.now_us()
    }

    #[napi]
    pub fn is_controllable(&self) -> bool {
        self.inner.is_controllable()
    }

    /// False when the clock cannot be moved (so for each of the movers below).
    #[napi]
    pub fn advance(&self, by_ms: f64) -> bool {
        self.inner.advance(millis(by_ms))
    }

    #[napi]
    pub fn freeze(&self) -> bool {
        self.inner.freeze()
    }

    #[napi]
    pub fn resume(&self) -> bool {
        self.inner.resume()
    }

    #[napi]
    pub fn rate(&self) -> f64 {
        self.inner.rate()
    }

    #[napi]
    pub fn set_rate(&self, rate: f64) -> bool {
        self.inner.set_rate(rate)
    }

    #[napi]
    pub fn skew(&self, by_ms: f64, ahead: bool) -> bool {
        self.inner.skew(millis(by_ms), ahead)
    }

    #[napi]
    pub fn offset_ms(&self) -> i64 {
        self.inner.offset_ms()
    }

    #[napi]
    pub fn set_offset(&self, offset_ms: i64) -> bool {
        self.inner.set_offset(offset_ms)
    }
}
