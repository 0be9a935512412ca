//! The CRC64 of RDB trailers and DUMP footers: Redis's "Jones" CRC-64 (reflected, polynomial
//! 0xad93d23594c935a9, zero init and xor), which the `crc` catalog names `CRC_64_REDIS`.
//! Readers and writers that checksum as bytes pass through them live here too.
//!
//! The crate's slice-by-16 table ([`Table<16>`], 32 KB) is used rather than its default
//! byte-at-a-time one: saving 1,000 HyperLogLogs spent 40 % of SAVE in the byte-wise loop,
//! where Redis's own `crcspeed` checksums 8 bytes per step.

use crc::{Crc, Digest, Table, CRC_64_REDIS};
use std::io::{self, Read, Write};

pub static CRC64: Crc<u64, Table<16>> = Crc::<u64, Table<16>>::new(&CRC_64_REDIS);

/// CRC64 of `data` from scratch.
pub fn crc64(data: &[u8]) -> u64 {
    CRC64.checksum(data)
}

/// A reader that checksums everything read through it.
pub struct CrcReader<R> {
    pub(crate) inner: R,
    pub(crate) digest: Digest<'static, u64, Table<16>>,
}

impl<R: Read> CrcReader<R> {
    pub fn new(inner: R) -> Self {
        CrcReader {
            inner,
            digest: CRC64.digest(),
        }
    }
    /// The checksum of everything read so far.
    pub fn crc(&self) -> u64 {
        self.digest.clone().finalize()
    }
}

impl<R: Read> Read for CrcReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.digest.update(&buf[..n]);
        Ok(n)
    }
}

/// A writer that checksums everything written through it.
pub struct CrcWriter<W> {
    pub(crate) inner: W,
    pub(crate) digest: Digest<'static, u64, Table<16>>,
}

impl<W: Write> CrcWriter<W> {
    pub fn new(inner: W) -> Self {
        CrcWriter {
            inner,
            digest: CRC64.digest(),
        }
    }
    pub fn crc(&self) -> u64 {
        self.digest.clone().finalize()
    }
}

impl<W: Write> Write for CrcWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.digest.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn redis_test_vector() {
        // Redis's own crc64 self-test value for "123456789".
        assert_eq!(super::crc64(b"123456789"), 0xe9c6d914c4b8d9ca);
    }
}
