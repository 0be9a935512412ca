//! `key-load-delay` (a test knob: a pause after each key a load reads) holding back a diskless
//! transfer as it holds back Redis's. Redis's replica loads a diskless image straight from the
//! socket (`rdbLoadRio` over the connection), so a delayed load reads the socket slowly and its
//! primary's transfer waits for it — Redis's tests lean on that to keep a transfer running while
//! they drop or stop replicas. embedis's replica loads the image once it is whole
//! (`engine::replica_full_sync`), so under the delay a thread walks the image as it arrives,
//! pausing after each key as the load would, and the link reads the socket no further ahead
//! than the walk has got. The load that follows does not pause again.

use std::io::{self, Read};
use std::time::Duration;

use tokio::sync::mpsc::{self, Receiver, Sender};

use embedis_rdb::{Event, RdbReader};

/// The walk that paces a transfer.
pub struct LoadPace {
    tx: Option<Sender<Vec<u8>>>,
}

/// Pieces queued for the walk: the link reads at most this many reads ahead of it.
const QUEUED: usize = 16;

impl LoadPace {
    /// A walk pausing `delay_us` µs after each key, for images of RDB versions up to `newest`;
    /// None without a delay (nothing to pace).
    pub fn start(delay_us: i64, newest: u16) -> Option<LoadPace> {
        if delay_us <= 0 {
            return None;
        }
        let (tx, rx) = mpsc::channel::<Vec<u8>>(QUEUED);
        std::thread::Builder::new()
            .name("embedis-load-pace".into())
            .spawn(move || walk(rx, delay_us as u64, newest))
            .ok()?;
        Some(LoadPace { tx: Some(tx) })
    }

    /// Hands the walk the image's next bytes, once it has room for them: until then the
    /// caller does not read the socket again.
    pub async fn feed(&mut self, bytes: &[u8]) {
        let Some(tx) = &self.tx else {
            return;
        };
        // An error: the walk ended (the image's end, or bytes it could not read).
        if tx.send(bytes.to_vec()).await.is_err() {
            self.tx = None;
        }
    }
}

/// The thread: reads the image's entries as they arrive, pausing after each key.
fn walk(rx: Receiver<Vec<u8>>, delay_us: u64, newest: u16) {
    let input = Arrivals {
        rx,
        piece: Vec::new(),
        at: 0,
    };
    let Ok(mut reader) = RdbReader::new_upto(input, newest) else {
        return;
    };
    while let Ok(event) = reader.next_event() {
        match event {
            Event::Entry { .. } => std::thread::sleep(Duration::from_micros(delay_us)),
            Event::Eof { .. } => return,
            _ => {}
        }
    }
}

/// The bytes handed to the walk, as a reader: blocks until the next piece arrives; the link
/// gone is the end.
struct Arrivals {
    rx: Receiver<Vec<u8>>,
    piece: Vec<u8>,
    at: usize,
}

impl Read for Arrivals {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.piece.len() {
            match self.rx.blocking_recv() {
                Some(piece) => {
                    self.piece = piece;
                    self.at = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.piece.len() - self.at);
        buf[..n].copy_from_slice(&self.piece[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An RDB image of `keys` string keys, as a save writes it.
    fn image(keys: usize) -> Vec<u8> {
        let opts = embedis_rdb::WriterOptions::default();
        let mut writer = embedis_rdb::RdbWriter::new(Vec::new(), opts).unwrap();
        for i in 0..keys {
            let key = format!("k{i}");
            let value = embedis_rdb::RdbValue::String(b"v".to_vec());
            writer
                .entry(key.as_bytes(), &value, Default::default())
                .unwrap();
        }
        writer.finish().unwrap()
    }

    /// The walk takes a key's delay per key: feeding an image of 40 keys at 10 ms a key, a
    /// byte at a time, cannot finish before the walk has paused for all but the queued ones.
    #[tokio::test(flavor = "current_thread")]
    async fn feeding_waits_for_the_walk() {
        let image = image(40);
        let mut pace = LoadPace::start(10_000, 12).expect("a delay paces");
        let started = std::time::Instant::now();
        for byte in image.chunks(1) {
            pace.feed(byte).await;
        }
        // The last bytes went into the queue: the walk had read all but [`QUEUED`] of them,
        // and each key is a few bytes.
        assert!(
            started.elapsed() >= Duration::from_millis(250),
            "{:?}",
            started.elapsed()
        );
        assert!(LoadPace::start(0, 12).is_none());
    }
}
