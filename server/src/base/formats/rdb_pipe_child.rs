//! The process a diskless full sync's image passes through, in the `embedis-server` binary.
//!
//! Redis forks a child for a diskless sync that writes the image into a pipe; the parent reads
//! the pipe and writes each piece to every replica still receiving (its "rdb pipe"). Tools and
//! tests see that child: `rdb_bgsave_in_progress` lasts as long as it does, the OOM killer
//! may take it (`kill -9`: the parent collects it and drops the replicas it fed), and it exits
//! when its parent dies. embedis never forks (it runs inside test processes too), so the binary
//! starts itself again in a mode that copies its standard input to its standard output: a
//! feeding thread of the parent writes the image in at the pace `rdb-key-save-delay` sets,
//! and the parent reads it back out as Redis's parent reads its child's pipe. The child ends
//! when its input ends — the image is complete, or the parent is gone.

use std::io::{self, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use super::rdb_child::ChildEnd;

/// The first argument that starts the binary as a diskless sync's child (then the OOM score to
/// take, or `-` to keep the parent's).
pub const PIPE_FLAG: &str = "--rdb-pipe-child";

/// The piece the feeding thread writes at a time (and the child copies): Redis's
/// `PROTO_IOBUF_LEN`, the size its parent reads from the pipe.
const PIECE: usize = 16 * 1024;

/// The parent's end of a running pipe child.
pub struct PipeChild {
    child: Child,
}

/// The child's output, for the parent to read the image back from.
pub type PipeOutput = ChildStdout;

impl PipeChild {
    /// Starts `program` as a pipe child with `oom_score` (None: the parent's), and a thread
    /// that writes `image` into it, spreading the bytes over `us_per_byte` µs each (0: at
    /// once). Returns the child and its output.
    pub fn spawn(
        program: &Path,
        oom_score: Option<i32>,
        image: Vec<u8>,
        us_per_byte: f64,
    ) -> io::Result<(PipeChild, PipeOutput)> {
        let score = oom_score.map_or_else(|| "-".to_string(), |s| s.to_string());
        let mut child = Command::new(program)
            .arg(PIPE_FLAG)
            .arg(score)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let input = child.stdin.take().expect("piped stdin");
        let output = child.stdout.take().expect("piped stdout");
        let fed = std::thread::Builder::new()
            .name("embedis-rdb-pipe".into())
            .spawn(move || feed(input, &image, us_per_byte));
        if let Err(e) = fed {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
        Ok((PipeChild { child }, output))
    }

    /// The child's pid (Redis's `child_pid`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Ends the child with SIGUSR1, the signal Redis's `killRDBChild` sends (its log then says
    /// "terminated by signal 10"); it is collected by [`PipeChild::try_end`].
    pub fn kill(&self) {
        // SAFETY: kill(2) on our own child's pid, which is not reaped before `try_end`.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGUSR1);
        }
    }

    /// How the child ended, once it has (reaped then); None while it runs.
    pub fn try_end(&mut self) -> Option<ChildEnd> {
        use std::os::unix::process::ExitStatusExt;
        let status = self.child.try_wait().ok()??;
        Some(match status.signal() {
            Some(signal) => ChildEnd::Signal(signal),
            None => ChildEnd::Exit(status.code().unwrap_or(1)),
        })
    }
}

impl Drop for PipeChild {
    /// A transfer forgotten before its child ended (the server stops) takes the child along.
    fn drop(&mut self) {
        if self.try_end().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The feeding thread: `image` into the child, no faster than `us_per_byte`; closing the input
/// at the end tells the child the image is complete. A write error means the child is gone.
fn feed<W: Write>(mut input: W, image: &[u8], us_per_byte: f64) {
    let started = Instant::now();
    let mut sent = 0;
    while sent < image.len() {
        let due = if us_per_byte > 0.0 {
            let elapsed_us = started.elapsed().as_micros() as f64;
            ((elapsed_us / us_per_byte) as usize).min(image.len())
        } else {
            image.len()
        };
        if due <= sent {
            // The next byte's time, in short steps so that a killed child is noticed soon.
            let wait_us = ((sent + 1) as f64 * us_per_byte) as u64;
            let wait_us = wait_us.saturating_sub(started.elapsed().as_micros() as u64);
            std::thread::sleep(Duration::from_micros(wait_us.clamp(1, 100_000)));
            continue;
        }
        let piece = (due - sent).min(PIECE);
        if input.write_all(&image[sent..sent + piece]).is_err() {
            return;
        }
        sent += piece;
    }
}

/// The child's side: takes its OOM score, then copies standard input to standard output until
/// the input ends. Returns the exit status (0: everything read was written).
pub fn pipe_child_main(args: &[String]) -> i32 {
    if let Some(score) = args.first().filter(|s| s.as_str() != "-") {
        // As Redis's child sets its class's score; a failure is not the transfer's.
        let _ = std::fs::write("/proc/self/oom_score_adj", format!("{score}\n"));
    }
    let copied = (|| {
        let mut input = io::stdin().lock();
        let mut output = io::stdout().lock();
        let mut buf = vec![0u8; PIECE];
        loop {
            let n = input.read(&mut buf)?;
            if n == 0 {
                return output.flush();
            }
            output.write_all(&buf[..n])?;
        }
    })();
    i32::from(copied.is_err())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The feeding thread's pace: the whole image arrives, and not before its time.
    #[test]
    fn feeding_at_a_pace_writes_no_byte_early() {
        let (mut reader, writer) = std::io::pipe().expect("pipe");
        let image: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        let copy = image.clone();
        let started = Instant::now();
        // 2.5 µs a byte: 40,000 bytes take at least 100 ms.
        let thread = std::thread::spawn(move || feed(writer, &copy, 2.5));
        let mut got = Vec::new();
        reader.read_to_end(&mut got).expect("read");
        thread.join().expect("feeder");
        assert_eq!(got, image);
        assert!(started.elapsed() >= Duration::from_millis(99));
    }

    /// Unpaced, the image goes at once, in pieces of at most [`PIECE`] bytes.
    #[test]
    fn feeding_unpaced_writes_everything() {
        let (mut reader, writer) = std::io::pipe().expect("pipe");
        let image: Vec<u8> = (0..100_000u32).map(|i| (i % 7) as u8).collect();
        let copy = image.clone();
        let thread = std::thread::spawn(move || feed(writer, &copy, 0.0));
        let mut got = Vec::new();
        reader.read_to_end(&mut got).expect("read");
        thread.join().expect("feeder");
        assert_eq!(got, image);
    }
}
