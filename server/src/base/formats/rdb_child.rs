//! The process a background save writes its file through, in the `embedis-server` binary: Redis
//! saves in a forked child, and tools and tests look for that child (its pid names the temporary
//! file `temp-<pid>.rdb`, the OOM killer sees it as `oom-score-adj-values`'s third class, a
//! SHUTDOWN kills it and removes its file). embedis never forks (its snapshot is taken in
//! memory, see `crate::model::snapshot`), so the binary starts itself again in a mode that copies
//! what it reads on standard input into `temp-<its pid>.rdb` and syncs it; the writer thread
//! sends the file's bytes down the pipe, and the parent renames the file once the child has
//! exited successfully. A server inside another process has no such program and writes the
//! file itself.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

/// The first argument that starts the binary as a save's child (then the OOM score to take, or
/// `-` to keep the parent's).
pub const CHILD_FLAG: &str = "--rdb-file-child";

/// What a child writes, which names its temporary file as Redis's child names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildFileKind {
    /// A background save: `temp-<pid>.rdb`.
    Save,
    /// The base of a background AOF rewrite: `temp-rewriteaof-bg-<pid>.aof`.
    AofRewrite,
}

impl ChildFileKind {
    fn arg(self) -> &'static str {
        match self {
            ChildFileKind::Save => "rdb",
            ChildFileKind::AofRewrite => "aof",
        }
    }

    fn temp_name(self, pid: u32) -> String {
        match self {
            ChildFileKind::Save => format!("temp-{pid}.rdb"),
            ChildFileKind::AofRewrite => format!("temp-rewriteaof-bg-{pid}.aof"),
        }
    }
}

/// The parent's end: the child's standard input, and the file it writes.
pub struct ChildFile {
    child: Child,
    stdin: Option<ChildStdin>,
    /// `temp-<child pid>.rdb` in the directory the child writes in.
    pub temp: PathBuf,
}

impl ChildFile {
    /// Starts `program` as a child writing a file of `kind` into `dir`, with `oom_score` as
    /// its OOM score (None: the parent's).
    pub fn spawn(
        program: &Path,
        dir: &Path,
        oom_score: Option<i32>,
        kind: ChildFileKind,
    ) -> io::Result<ChildFile> {
        let score = oom_score.map_or_else(|| "-".to_string(), |s| s.to_string());
        let mut child = Command::new(program)
            .arg(CHILD_FLAG)
            .arg(score)
            .arg(kind.arg())
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.take();
        let temp = dir.join(kind.temp_name(child.id()));
        Ok(ChildFile { child, stdin, temp })
    }

    /// The child's pid (Redis's `child_pid`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes the pipe and waits for the child to sync the file and exit.
    pub fn finish(mut self) -> io::Result<()> {
        drop(self.stdin.take());
        let status = self.child.wait()?;
        if status.success() {
            Ok(())
        } else if let Some(signal) = status.signal() {
            Err(io::Error::other(KilledBySignal(signal)))
        } else {
            Err(io::Error::other(format!("the save's child {status}")))
        }
    }

    /// A broken pipe means the child is gone: if a signal ended it, the error says so.
    fn pipe_error(&mut self, error: io::Error) -> io::Error {
        if error.kind() != io::ErrorKind::BrokenPipe {
            return error;
        }
        match self.child.wait().ok().and_then(|s| s.signal()) {
            Some(signal) => io::Error::other(KilledBySignal(signal)),
            None => error,
        }
    }
}

/// A save's child ended by a signal (Redis logs "Background saving terminated by signal N" and
/// counts the save failed, unless the signal is SIGUSR1, its own kill).
#[derive(Debug)]
pub struct KilledBySignal(pub i32);

impl std::fmt::Display for KilledBySignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the save's child was terminated by signal {}", self.0)
    }
}

impl std::error::Error for KilledBySignal {}

/// How a save's child ended, if it has: looked at without reaping it (`waitid` with
/// `WNOWAIT`), so that the writer's own wait still gets its status. The tick asks, as Redis's
/// `checkChildrenDone` does, because a writer pausing under `rdb-key-save-delay` may not write
/// (and so see the broken pipe) for a long time.
pub fn child_end(pid: u32) -> Option<ChildEnd> {
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: waitid writes only into `info`, which outlives the call.
    let rc = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
    // SAFETY: si_pid and si_status are set for a child waitid reports (zeroed otherwise).
    if rc != 0 || unsafe { info.si_pid() } == 0 {
        return None;
    }
    let status = unsafe { info.si_status() };
    Some(match info.si_code {
        libc::CLD_KILLED | libc::CLD_DUMPED => ChildEnd::Signal(status),
        _ => ChildEnd::Exit(status),
    })
}

/// How a child process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildEnd {
    Exit(i32),
    Signal(i32),
}

impl ChildEnd {
    /// Redis's log line for a failed child of `what` ("Background saving"): killed by a
    /// signal, or exited with an error, in `on_error`'s words.
    pub fn describe(self, what: &str, on_error: &str) -> String {
        match self {
            ChildEnd::Signal(signal) => format!("{what} terminated by signal {signal}"),
            ChildEnd::Exit(_) => on_error.to_string(),
        }
    }
}

/// How the child `pid` failed, if it did (killed, or exited non-zero): `None` while it runs,
/// after a clean exit, or with no child — the tick's check of a save's or a rewrite's child
/// (Redis's `checkChildrenDone`).
pub fn failed_end(pid: Option<u32>) -> Option<ChildEnd> {
    match child_end(pid?) {
        None | Some(ChildEnd::Exit(0)) => None,
        end => end,
    }
}

/// The signal that ended a save's child, if `error` says one did.
pub fn killed_by_signal(error: &io::Error) -> Option<i32> {
    error
        .get_ref()
        .and_then(|e| e.downcast_ref::<KilledBySignal>())
        .map(|k| k.0)
}

impl Write for ChildFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let result = match &mut self.stdin {
            Some(stdin) => stdin.write(buf),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        };
        result.map_err(|e| self.pipe_error(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.stdin {
            Some(stdin) => stdin.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for ChildFile {
    /// A save abandoned before its end kills its child (Redis's `killRDBChild`); the caller
    /// removes the file.
    fn drop(&mut self) {
        if self.stdin.take().is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The child's side: takes its OOM score, copies standard input into its temporary file
/// (`temp-<pid>.rdb`, or the rewrite's name when the second argument is `aof`) in the working
/// directory and syncs it. Returns the exit status (0: the file is complete).
pub fn child_main(args: &[String]) -> i32 {
    if let Some(score) = args.first().filter(|s| s.as_str() != "-") {
        // As Redis's child sets its class's score; a failure is not the save's.
        let _ = std::fs::write("/proc/self/oom_score_adj", format!("{score}\n"));
    }
    let kind = match args.get(1).map(String::as_str) {
        Some("aof") => ChildFileKind::AofRewrite,
        _ => ChildFileKind::Save,
    };
    let temp = PathBuf::from(kind.temp_name(std::process::id()));
    let copied = (|| {
        let mut file = BufWriter::with_capacity(1 << 16, File::create(&temp)?);
        let mut input = io::stdin().lock();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = input.read(&mut buf)?;
            if n == 0 {
                break;
            }
            file.write_all(&buf[..n])?;
        }
        let file = file.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()
    })();
    match copied {
        Ok(()) => 0,
        Err(_) => {
            let _ = std::fs::remove_file(&temp);
            1
        }
    }
}
