//! A member's fault injection (`index.js`'s `Faults`), the Rust API's `Server::faults()`
//! argument for argument: an error on the next matching commands, replies held back, a
//! connection closed without a reply, the whole server paused, every connection dropped.

use napi_derive::napi;

use crate::convert::millis;
use crate::group::NativeGroup;

#[napi]
impl NativeGroup {
    fn faults<T>(&self, index: u32, f: impl FnOnce(embedis::Faults<'_>) -> T) -> napi::Result<T> {
        self.on_member(index, |s| f(s.faults()))
    }

    #[napi]
    pub fn fault_error(
        &self,
        index: u32,
        command: String,
        key_pattern: String,
        error: String,
        times: u32,
    ) -> napi::Result<()> {
        self.faults(index, |f| {
            f.error(&command, &key_pattern, &error, times as u64)
        })
    }

    #[napi]
    pub fn fault_latency(
        &self,
        index: u32,
        command: String,
        key_pattern: String,
        delay_ms: f64,
    ) -> napi::Result<()> {
        self.faults(index, |f| {
            f.latency(&command, &key_pattern, millis(delay_ms))
        })
    }

    #[napi]
    pub fn fault_close(
        &self,
        index: u32,
        command: String,
        key_pattern: String,
    ) -> napi::Result<()> {
        self.faults(index, |f| f.close(&command, &key_pattern))
    }

    #[napi]
    pub fn fault_pause(&self, index: u32, duration_ms: f64) -> napi::Result<()> {
        self.faults(index, |f| f.pause(millis(duration_ms)))
    }

    #[napi]
    pub fn fault_hold_replication(&self, index: u32, held: bool) -> napi::Result<()> {
        self.faults(index, |f| f.hold_replication(held))
    }

    #[napi]
    pub fn fault_paused_until(&self, index: u32) -> napi::Result<Option<i64>> {
        self.faults(index, |f| f.paused_until())
    }

    #[napi]
    pub fn fault_drop_connections(&self, index: u32) -> napi::Result<u32> {
        self.faults(index, |f| f.drop_connections() as u32)
    }

    #[napi]
    pub fn fault_disk_write_error(
        &self,
        index: u32,
        errno: i32,
        short: u32,
        times: u32,
    ) -> napi::Result<()> {
        self.faults(index, |f| {
            f.disk_write_error(errno, short as usize, u64::from(times))
        })
    }

    #[napi]
    pub fn fault_disk_fsync_error(&self, index: u32, errno: i32, times: u32) -> napi::Result<()> {
        self.faults(index, |f| f.disk_fsync_error(errno, u64::from(times)))
    }

    #[napi]
    pub fn fault_list(&self, index: u32) -> napi::Result<Vec<String>> {
        self.faults(index, |f| {
            f.list().iter().map(|r| format!("{r:?}")).collect()
        })
    }

    #[napi]
    pub fn fault_clear(&self, index: u32) -> napi::Result<()> {
        self.faults(index, |f| f.clear())
    }
}
