//! `Clock`: a server's clock, the Rust API's `embedis::Clock`. A manual clock stands still
//! until the test moves it; every server started on the same `Clock` reads the same time.

use pyo3::prelude::*;

use crate::convert::duration;
use crate::EmbedisError;

#[pyclass(module = "embedis._embedis", frozen)]
pub struct Clock {
    pub inner: embedis::Clock,
}

impl Clock {
    /// The Rust API answers false when the clock cannot be moved (the system clock).
    fn moved(&self, done: bool) -> PyResult<()> {
        if done {
            Ok(())
        } else {
            Err(EmbedisError::new_err(
                "the system clock cannot be moved: start the server with clock=\"manual\"",
            ))
        }
    }
}

#[pymethods]
impl Clock {
    /// A clock frozen at the current real time: it moves only when told to.
    #[staticmethod]
    fn manual() -> Clock {
        Clock {
            inner: embedis::Clock::manual(),
        }
    }

    /// A clock that runs with real time until a test freezes, moves or skews it.
    #[staticmethod]
    fn controllable() -> Clock {
        Clock {
            inner: embedis::Clock::controllable(),
        }
    }

    /// Milliseconds since the UNIX epoch, as the servers on this clock read them.
    fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }

    /// Microseconds since the UNIX epoch.
    fn now_us(&self) -> i64 {
        self.inner.now_us()
    }

    /// True for a clock a test can move (not the system clock).
    #[getter]
    fn is_controllable(&self) -> bool {
        self.inner.is_controllable()
    }

    /// Moves the clock forward by `by` (a `timedelta` or milliseconds): TTLs, blocking
    /// timeouts and cluster timeouts fall due as if that much time had passed.
    fn advance(&self, by: &Bound<'_, PyAny>) -> PyResult<()> {
        let by = duration(by)?;
        self.moved(self.inner.advance(by))
    }

    /// Stops the clock at its current time.
    fn freeze(&self) -> PyResult<()> {
        self.moved(self.inner.freeze())
    }

    /// Lets a frozen clock run again from where it stopped.
    fn resume(&self) -> PyResult<()> {
        self.moved(self.inner.resume())
    }

    /// How fast the clock runs against real time (1.0 normal); settable (clock drift).
    #[getter]
    fn get_rate(&self) -> f64 {
        self.inner.rate()
    }

    #[setter]
    fn set_rate(&self, rate: f64) -> PyResult<()> {
        self.moved(self.inner.set_rate(rate))
    }

    /// Skews the clock `by` ahead of (or, `ahead=False`, behind) the time it would read; a
    /// new skew replaces the previous one.
    #[pyo3(signature = (by, ahead=true))]
    fn skew(&self, by: &Bound<'_, PyAny>, ahead: bool) -> PyResult<()> {
        let by = duration(by)?;
        self.moved(self.inner.skew(by, ahead))
    }

    /// The current skew in milliseconds (negative: behind).
    #[getter]
    fn offset_ms(&self) -> i64 {
        self.inner.offset_ms()
    }

    /// Sets the skew to `offset_ms` (replacing any other; 0 undoes it).
    fn set_offset(&self, offset_ms: i64) -> PyResult<()> {
        self.moved(self.inner.set_offset(offset_ms))
    }

    fn __repr__(&self) -> String {
        format!("<embedis.Clock at {} ms>", self.inner.now_ms())
    }
}
