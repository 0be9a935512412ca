//! The write stream: what Redis 7.0 propagates to its AOF and its replicas, as the RESP
//! multibulk bytes it writes there (`SELECT` when the database changes, effects of a command
//! that wrote more than once wrapped in `MULTI`/`EXEC`).
//!
//! It is a model-layer buffer, like the transaction queue: `call` (the kernel) feeds it after
//! each command that moved the `dirty` counter — the command's arguments, or the form its handler
//! replaced them with (`Ctx::propagate_as`, Redis's `rewriteClientCommandVector`) — and the
//! keyspace adds the deletions no command asked for (lazy and active expiry, eviction: Redis's
//! `propagateDeletion`). Those, and whatever a handler adds (`Ctx::also_propagate`, Redis's
//! `alsoPropagate`), queue as pending operations until the outermost command returns; then
//! [`WriteStream::flush`] writes them out (Redis's `propagatePendingCommands`). Its consumers —
//! an AOF writer, replica links, a test's tap — drain the bytes with [`WriteStream::take`].
//!
//! While no consumer is registered nothing is built: `call` tests [`WriteStream::is_on`] once
//! per command, and the keyspace does the same before it queues a deletion.
//!
//! There is one stream, the replicas' view. Redis's AOF differs in one respect: PUBLISH and
//! SPUBLISH are forced to the replicas only, so an AOF writer must leave them out. And under
//! `aof-timestamp-enabled` the AOF's copy carries `#TS:<unix seconds>` annotations: one before
//! the first command written in each new second, as Redis's `feedAppendOnlyFile` puts them.

use bytes::{BufMut, Bytes, BytesMut};

/// A command to propagate, the database it belongs to and where it goes.
#[derive(Debug, Clone)]
struct Op {
    db: usize,
    args: Vec<Bytes>,
    targets: Targets,
}

/// Where a command propagates (Redis's `PROPAGATE_AOF` and `PROPAGATE_REPL`): both, unless a
/// script's `redis.set_repl` said otherwise for its commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Targets {
    pub aof: bool,
    pub replicas: bool,
}

impl Targets {
    pub const ALL: Targets = Targets {
        aof: true,
        replicas: true,
    };

    /// From `redis.set_repl`'s flags: 1 the AOF, 2 the replicas.
    pub fn from_flags(flags: u8) -> Targets {
        Targets {
            aof: flags & 1 != 0,
            replicas: flags & 2 != 0,
        }
    }
}

impl Default for Targets {
    fn default() -> Targets {
        Targets::ALL
    }
}

/// What a handler asked for its own command's propagation (set through `Ctx`, reset per call).
#[derive(Debug, Clone, Default)]
pub enum Propagation {
    /// As executed, if it changed the dataset.
    #[default]
    AsIs,
    /// As these arguments instead (Redis's `rewriteClientCommandVector`), if it changed the
    /// dataset.
    Replaced(Vec<Bytes>),
    /// As executed, whether it changed anything or not (Redis's `forceCommandPropagation`).
    Forced,
    /// Not at all (Redis's `preventCommandPropagation`): EXEC, scripts, SPOP with a count —
    /// commands whose effects are propagated one by one instead.
    Prevented,
}

/// What `call` keeps for the running command while the stream is on.
#[derive(Debug, Default)]
struct Level {
    propagation: Propagation,
    dirty_before: u64,
    side_dirty_before: u64,
}

/// The buffer of what propagates (see the module documentation).
#[derive(Debug, Default)]
pub struct WriteStream {
    /// Registered consumers; while zero nothing is queued or written.
    consumers: usize,
    /// Operations of the running command (and of the commands it runs), not yet written.
    pending: Vec<Op>,
    /// Bytes written, waiting for the consumers to take them.
    out: BytesMut,
    /// The database of the last command written (`SELECT` precedes one for another database).
    selected: Option<usize>,
    /// `dirty` moves that were not a command's own change (lazy expiry of keys and hash
    /// fields): `call` leaves them out when it decides whether the command propagates.
    pub side_dirty: u64,
    /// `lazyfree-lazy-expire`: expired keys propagate as UNLINK instead of DEL.
    pub lazy_expire: bool,
    /// Redis 7.2 writes MULTI and EXEC with no database: the SELECT comes inside the
    /// transaction, before its first command (7.0 selects the database before MULTI).
    pub bare_multi: bool,
    /// How deep in commands run by commands `call` is (1: a client's own command).
    depth: u32,
    /// The running command's propagation and its starting counters; `outer` keeps those of
    /// the commands that run it (EXEC, a script), restored when it returns.
    level: Level,
    outer: Vec<Level>,
    /// The outermost command asked not to wrap its effects in MULTI/EXEC.
    unwrapped: bool,
    /// Where the commands a script runs propagate (`redis.set_repl`; back to both when the
    /// script ends). Deletions and other operations a command adds go to both, as Redis's.
    pub script_targets: Targets,
    /// Consumers taking `out` (replica links, a test's tap), apart from the AOF.
    taps: usize,
    /// The AOF's own copy of the stream, and the database its file last selected (a new
    /// incremental file starts with a SELECT).
    aof: bool,
    aof_out: BytesMut,
    aof_selected: Option<usize>,
    /// `aof-timestamp-enabled`: the clock the annotations read, and the second last annotated
    /// (kept across files and switches, as Redis's `aof_cur_timestamp`).
    aof_clock: Option<crate::base::clock::Clock>,
    aof_annotated_s: i64,
}

impl WriteStream {
    /// True while a consumer is registered (the one test on the hot path).
    #[inline(always)]
    pub fn is_on(&self) -> bool {
        self.consumers != 0
    }

    /// Registers a consumer: from now on writes are recorded. The first command written after
    /// the first consumer registers is preceded by a `SELECT`, as after a replica's SYNC.
    pub fn add_consumer(&mut self) {
        if self.taps == 0 {
            self.selected = None;
            self.out.clear();
        }
        self.taps += 1;
        self.consumers += 1;
    }

    /// The next command taken by the taps is preceded by a `SELECT` (a replica has just been
    /// sent a full copy of the dataset, as Redis resets `slaveseldb`).
    pub fn reselect(&mut self) {
        self.selected = None;
    }

    /// Starts or stops the AOF's copy of the stream.
    pub fn set_aof(&mut self, on: bool) {
        if on == self.aof {
            return;
        }
        self.aof = on;
        self.aof_out.clear();
        self.aof_selected = None;
        if on {
            self.consumers += 1;
        } else {
            self.consumers = self.consumers.saturating_sub(1);
            if self.consumers == 0 {
                self.pending.clear();
            }
        }
    }

    /// Turns the AOF's `#TS:` annotations on (with the server's clock) or off.
    pub fn set_aof_timestamps(&mut self, clock: Option<crate::base::clock::Clock>) {
        self.aof_clock = clock;
    }

    /// The AOF opened a new file: its next command is preceded by a SELECT.
    pub fn aof_reselect(&mut self) {
        self.aof_selected = None;
    }

    /// Takes the AOF's bytes written since the last take.
    pub fn take_aof(&mut self) -> BytesMut {
        take_bounded(&mut self.aof_out)
    }

    /// True if the AOF has bytes to write.
    #[inline]
    pub fn aof_pending(&self) -> bool {
        !self.aof_out.is_empty()
    }

    /// Unregisters a consumer; with the last one gone nothing is recorded any more.
    pub fn remove_consumer(&mut self) {
        self.taps = self.taps.saturating_sub(1);
        self.consumers = self.consumers.saturating_sub(1);
        if self.taps == 0 {
            self.out.clear();
        }
        if self.consumers == 0 {
            self.pending.clear();
        }
    }

    /// Queues `args` on database `db` after what is pending (Redis's `alsoPropagate`).
    pub fn also(&mut self, db: usize, args: Vec<Bytes>) {
        self.also_to(db, args, Targets::ALL);
    }

    /// [`WriteStream::also`] for these targets only (nothing if neither).
    fn also_to(&mut self, db: usize, args: Vec<Bytes>, targets: Targets) {
        if self.is_on() && (targets.aof || targets.replicas) {
            self.pending.push(Op { db, args, targets });
        }
    }

    /// Queues the deletion of `key` of `db` that no command asked for: DEL, or UNLINK with
    /// `lazy` (Redis's `propagateDeletion`).
    pub fn deleted(&mut self, db: usize, key: &[u8], lazy: bool) {
        self.also(db, vec![del_verb(lazy), Bytes::copy_from_slice(key)]);
    }

    /// Queues the deletion of a key that expired at a lookup or in the active cycle.
    pub fn expired(&mut self, db: usize, key: &[u8]) {
        self.deleted(db, key, self.lazy_expire);
    }

    /// `call` enters a command (only while the stream is on); `dirty` is the keyspace's counter.
    #[cold]
    #[inline(never)]
    pub fn enter(&mut self, dirty: u64) {
        let level = Level {
            propagation: Propagation::AsIs,
            dirty_before: dirty,
            side_dirty_before: self.side_dirty,
        };
        let outer = std::mem::replace(&mut self.level, level);
        if self.depth > 0 {
            self.outer.push(outer);
        }
        self.depth += 1;
    }

    /// The running command's propagation, for `Ctx`'s methods.
    pub fn propagation(&mut self) -> &mut Propagation {
        &mut self.level.propagation
    }

    /// `call` leaves a command: it propagates as its handler asked if it moved `dirty` (now
    /// `dirty`) by its own writes, on `db` (the client's database after it), as `args` unless
    /// replaced. After the outermost command (a client's own, a blocked command served, a
    /// command of the embedding process), what is pending is written out.
    #[cold]
    #[inline(never)]
    pub fn leave(&mut self, dirty: u64, db: usize, args: &[Bytes]) {
        let level = std::mem::take(&mut self.level);
        // A command propagates if it changed the dataset itself: deletions of expired keys on
        // its way propagate on their own.
        let side = self.side_dirty - level.side_dirty_before;
        let changed = dirty.saturating_sub(level.dirty_before) > side;
        let propagation = level.propagation;
        if let Some(outer) = self.outer.pop() {
            self.level = outer;
        }
        self.depth = self.depth.saturating_sub(1);
        // Outside scripts `script_targets` is both.
        let targets = self.script_targets;
        match propagation {
            Propagation::AsIs if changed => self.also_to(db, args.to_vec(), targets),
            Propagation::Replaced(args) if changed => self.also_to(db, args, targets),
            Propagation::Forced => self.also_to(db, args.to_vec(), targets),
            _ => {}
        }
        if self.depth == 0 {
            let wrap = !std::mem::take(&mut self.unwrapped);
            self.flush(wrap);
        }
    }

    /// See `Ctx::propagate_unwrapped`: only a client's own command can ask.
    pub fn unwrap_outermost(&mut self) {
        if self.depth == 1 {
            self.unwrapped = true;
        }
    }

    /// Queues the deletion of expired fields of the hash at `key` (HDEL, as Redis 8).
    pub fn hash_field_expired<F: AsRef<[u8]>>(&mut self, db: usize, key: &[u8], fields: &[F]) {
        let mut args = Vec::with_capacity(fields.len() + 2);
        args.push(Bytes::from_static(b"HDEL"));
        args.push(Bytes::copy_from_slice(key));
        args.extend(fields.iter().map(|f| Bytes::copy_from_slice(f.as_ref())));
        self.also(db, args);
    }

    /// True if operations are waiting for [`WriteStream::flush`].
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Writes the pending operations out (Redis's `propagatePendingCommands`): wrapped in
    /// `MULTI`/`EXEC` when there are several and `wrap` allows it (not for the active expiry
    /// cycle, eviction, or commands that touch arbitrary keys such as SCAN).
    pub fn flush(&mut self, wrap: bool) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        let transaction = wrap && pending.len() > 1;
        let (first, last) = if self.bare_multi {
            (None, None)
        } else {
            (Some(pending[0].db), Some(pending[pending.len() - 1].db))
        };
        // MULTI and EXEC go to both, whatever the targets of what they wrap (as Redis's
        // propagatePendingCommands).
        if transaction {
            self.write(first, &[Bytes::from_static(b"MULTI")], Targets::ALL);
        }
        for op in &pending {
            self.write(Some(op.db), &op.args, op.targets);
        }
        if transaction {
            self.write(last, &[Bytes::from_static(b"EXEC")], Targets::ALL);
        }
        // Keep the allocation for the next command.
        self.pending = pending;
        self.pending.clear();
    }

    /// Appends one command on `db`, preceded by `SELECT db` if the last one was on another
    /// (`None`: a command of no database, which selects none).
    fn write(&mut self, db: Option<usize>, args: &[Bytes], targets: Targets) {
        if self.taps > 0 && targets.replicas {
            if let Some(db) = db.filter(|&db| self.selected != Some(db)) {
                let id = db.to_string();
                write_multibulk(&mut self.out, &[b"SELECT", id.as_bytes()]);
                self.selected = Some(db);
            }
            write_multibulk(&mut self.out, args);
        }
        // PUBLISH and SPUBLISH reach replicas only (Redis propagates them with
        // PROPAGATE_REPL): the AOF leaves them out.
        let replica_only = args.first().is_some_and(|a| {
            a.eq_ignore_ascii_case(b"publish") || a.eq_ignore_ascii_case(b"spublish")
        });
        if self.aof && targets.aof && !replica_only {
            if let Some(clock) = &self.aof_clock {
                let now_s = clock.now_ms().div_euclid(1000);
                if now_s > self.aof_annotated_s {
                    self.aof_annotated_s = now_s;
                    self.aof_out.put_slice(b"#TS:");
                    self.aof_out
                        .put_slice(itoa::Buffer::new().format(now_s).as_bytes());
                    self.aof_out.put_slice(b"\r\n");
                }
            }
            if let Some(db) = db.filter(|&db| self.aof_selected != Some(db)) {
                let id = db.to_string();
                write_multibulk(&mut self.aof_out, &[b"SELECT", id.as_bytes()]);
                self.aof_selected = Some(db);
            }
            write_multibulk(&mut self.aof_out, args);
        }
    }

    /// Writes a command for the replicas alone, with no database (no `SELECT`; not in the
    /// AOF): the primary's periodic PING.
    pub fn to_replicas_only(&mut self, args: &[Bytes]) {
        if self.taps > 0 {
            write_multibulk(&mut self.out, args);
        }
    }

    /// Takes the bytes written since the last take.
    pub fn take(&mut self) -> Bytes {
        take_bounded(&mut self.out).freeze()
    }

    /// How many bytes wait for the consumers.
    pub fn len(&self) -> usize {
        self.out.len()
    }

    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }
}

/// Above this capacity a buffer is handed over whole and the next write starts a new one.
const KEEP_CAPACITY: usize = 64 * 1024;

/// Takes what `buffer` holds. Its room is kept for the next writes (no allocation per command),
/// unless a big command grew it: a split would keep that whole allocation alive behind the
/// small writes that follow (a 32 MB SET held 32 MB more for good; Redis 7.0.15's
/// unit/pendingquerybuf found it), so the buffer goes with the bytes and is freed with them.
fn take_bounded(buffer: &mut BytesMut) -> BytesMut {
    if buffer.capacity() > KEEP_CAPACITY {
        std::mem::take(buffer)
    } else {
        buffer.split()
    }
}

/// The command a deletion propagates as: DEL, or UNLINK when the value was freed lazily.
pub fn del_verb(lazy: bool) -> Bytes {
    Bytes::from_static(if lazy { b"UNLINK" } else { b"DEL" })
}

/// A number written out as a command argument of the write stream (`Ctx::int_arg` is the
/// opposite: it parses one).
pub fn integer_arg(n: i64) -> Bytes {
    Bytes::copy_from_slice(itoa::Buffer::new().format(n).as_bytes())
}

/// Appends `*N\r\n` and each argument as `$len\r\n…\r\n` (also MIGRATE's requests).
pub fn write_multibulk<A: AsRef<[u8]>>(out: &mut BytesMut, args: &[A]) {
    let mut number = itoa::Buffer::new();
    out.put_u8(b'*');
    out.extend_from_slice(number.format(args.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for arg in args {
        let arg = arg.as_ref();
        out.put_u8(b'$');
        out.extend_from_slice(number.format(arg.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    }

    #[test]
    fn nothing_is_recorded_without_a_consumer() {
        let mut stream = WriteStream::default();
        stream.also(0, args(&["SET", "k", "v"]));
        stream.flush(true);
        assert!(stream.take().is_empty());
    }

    #[test]
    fn select_precedes_a_change_of_database_and_several_ops_are_wrapped() {
        let mut stream = WriteStream::default();
        stream.add_consumer();
        stream.also(0, args(&["SET", "k", "v"]));
        stream.flush(true);
        stream.also(1, args(&["DEL", "a"]));
        stream.also(1, args(&["SET", "a", "1"]));
        stream.flush(true);
        stream.also(1, args(&["DEL", "b"]));
        stream.also(1, args(&["DEL", "c"]));
        stream.flush(false);
        let expected = "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n\
             *2\r\n$6\r\nSELECT\r\n$1\r\n1\r\n*1\r\n$5\r\nMULTI\r\n*2\r\n$3\r\nDEL\r\n$1\r\na\r\n\
             *3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n*1\r\n$4\r\nEXEC\r\n\
             *2\r\n$3\r\nDEL\r\n$1\r\nb\r\n*2\r\n$3\r\nDEL\r\n$1\r\nc\r\n";
        assert_eq!(stream.take(), expected.as_bytes());
    }

    /// A big command's buffer leaves with its bytes: what stays for the next writes is small
    /// (it was the whole allocation, for good), and small writes keep their room.
    #[test]
    fn a_big_command_does_not_leave_its_buffer_behind() {
        let mut stream = WriteStream::default();
        stream.add_consumer();
        let value = "x".repeat(1 << 20);
        stream.also(0, args(&["SET", "k", &value]));
        stream.flush(true);
        let big = stream.take();
        assert!(big.len() > 1 << 20);
        drop(big);
        stream.also(0, args(&["SET", "k", "v"]));
        stream.flush(true);
        let small = stream.take();
        assert!(small.ends_with(b"$1\r\nv\r\n"));
        // A split would have reclaimed the big allocation for this small write.
        assert!(
            stream.out.capacity() <= KEEP_CAPACITY,
            "{}",
            stream.out.capacity()
        );
    }
}
