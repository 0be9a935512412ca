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
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

/// The first argument that starts the binary as a save's child (then the OOM score to take, or
/// `-` to keep the parent's).
pub const CHILD_FLAG: &str = "--rdb-file-child";

/// The parent's end: the child's standard input, and the file it writes.
pub struct ChildFile {
    child: Child,
    stdin: Option<ChildStdin>,
    /// `temp-<child pid>.rdb` in the directory the child writes in.
    pub temp: PathBuf,
}

impl ChildFile {
    /// Starts `program` as a save's child writing into `dir`, with `oom_score` as its OOM score
    /// (None: the parent's).
    pub fn spawn(program: &Path, dir: &Path, oom_score: Option<i32>) -> io::Result<ChildFile> {
        let score = oom_score.map_or_else(|| "-".to_string(), |s| s.to_string());
        let mut child = Command::new(program)
            .arg(CHILD_FLAG)
            .arg(score)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.take();
        let temp = dir.join(format!("temp-{}.rdb", child.id()));
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
        } else {
            Err(io::Error::other(format!("the save's child {status}")))
        }
    }
}

impl Write for ChildFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.stdin {
            Some(stdin) => stdin.write(buf),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        }
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

/// The child's side: takes its OOM score, copies standard input into `temp-<pid>.rdb` in the
/// working directory and syncs it. Returns the exit status (0: the file is complete).
pub fn child_main(args: &[String]) -> i32 {
    if let Some(score) = args.first().filter(|s| s.as_str() != "-") {
        // As Redis's child sets its class's score; a failure is not the save's.
        let _ = std::fs::write("/proc/self/oom_score_adj", format!("{score}\n"));
    }
    let temp = PathBuf::from(format!("temp-{}.rdb", std::process::id()));
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
