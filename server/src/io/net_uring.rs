//! Connection I/O through io_uring (`io-uring yes`, off by default): the system calls of every
//! connection's receives and sends in one turn of the event loop go to the kernel in one
//! `io_uring_enter`, instead of one `read` and one `write` per connection per turn.
//!
//! What it replaces is only the socket I/O of plain TCP and unix-socket clients. A connection
//! still runs `crate::io::net`'s `run_connection` (requests, blocking, out-of-turn output, kills,
//! the AOF's turn), through [`UringStream`], an `AsyncRead + AsyncWrite` whose reads come from
//! receives the ring completed and whose writes queue sends for the ring. TLS clients,
//! replication links and the cluster bus keep tokio's sockets; the listeners stay on tokio
//! (an accept is not on the data path).
//!
//! One [`Uring`] per server, on the engine's thread: a driver task ([`run`]) submits what the
//! streams queued (a send of the bytes written, a receive to arm) and hands completions back,
//! waking the tasks. Receives are multishot (armed once per connection) and take their buffers
//! from a provided-buffer ring of 128 × 16 KB shared by all connections; the driver copies the
//! bytes into the connection's input and gives the buffer straight back. The driver waits on
//! the ring's descriptor in tokio's epoll, so one turn costs `epoll_wait` + `io_uring_enter`
//! however many clients it serves — Redis's loop makes one `read` and one `write` per client
//! besides its `epoll_wait`. The ring is set up with `IORING_SETUP_COOP_TASKRUN`: a receive's
//! completion is posted when this thread next enters the kernel, without interrupting it.
//!
//! Measured (BENCHMARKS.md, "io_uring"): 200,000 GETs from 50 clients take 18,080
//! `io_uring_enter` and 18,388 `epoll_wait` instead of 400,000 reads and writes, yet the CPU
//! per request at -P 1 is 3-4% higher than with epoll (the kernel's TCP work is the same, and a
//! turn now serves fewer requests), for ~3% more requests per second. So it stays an option,
//! off by default. What it costs: this module (the driver, the buffer ring, the unsafe rule
//! below), a copy of the input (pool buffer to connection) and of the output (into the send
//! queue), and a second way for a busy script to serve these clients (it reaps the ring
//! itself, see [`install_busy_hooks`]).
//!
//! Memory safety rests on one rule: a connection's buffers live as long as the kernel may use
//! them. A dropped stream marks its connection; the driver cancels what is in flight and frees
//! the connection (closing its socket) only when no operation on it is left. If the server
//! stops with operations in flight, the driver's `Drop` cancels them and waits; what does not
//! finish is leaked (ring, pool and connections), never freed under the kernel.

use std::cell::RefCell;
use std::future::poll_fn;
use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::task::{Context, Poll, Waker};

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

/// Submission queue entries; the completion queue gets twice as many. A connection has at most
/// three operations in flight (a receive, a send, a cancel), and a full submission queue is
/// submitted before more are pushed.
const RING_ENTRIES: u32 = 1024;

/// The pool of receive buffers the kernel picks from (a power of two) and each one's size (a
/// receive takes up to 16 KB, as the tokio path reads up to 16 KB at a time). Received bytes
/// are copied out of a buffer as soon as its completion is seen, so a buffer is held only
/// between the kernel's receive and the driver's next look at the ring.
const POOL_BUFFERS: u16 = 128;
const POOL_BUFFER_SIZE: usize = 16 * 1024;
const POOL_GROUP: u16 = 0;

/// Unread input a connection may hold before its receive is stopped (and re-armed when the task
/// has read it): a client whose requests are not being read (it is blocked, or a script is busy)
/// is held back by TCP, as with epoll, instead of filling memory.
const INPUT_LIMIT: usize = 256 * 1024;

/// Bytes a connection may have written but not yet sent before its writes wait for the socket.
const SEND_WINDOW: usize = 1 << 20;

const OP_RECV: u64 = 0;
const OP_SEND: u64 = 1;
const OP_CANCEL: u64 = 2;

fn user_data(slot: u32, op: u64) -> u64 {
    (u64::from(slot) << 2) | op
}

/// Where a connection's receive stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Recv {
    /// No receive armed.
    Idle,
    /// A multishot receive is armed: each arrival of data completes with a pool buffer.
    Armed,
    /// The peer closed its side.
    Eof,
    /// The receive failed with this errno.
    Failed(i32),
}

/// One connection's state, shared by its stream (the task) and the driver.
struct Conn {
    fd: OwnedFd,
    /// Received bytes, unread from `input_start` on.
    input: Vec<u8>,
    input_start: usize,
    recv: Recv,
    /// A cancel of the armed receive was sent (input over [`INPUT_LIMIT`]).
    pausing: bool,
    reader: Option<Waker>,
    /// Bytes written by the task, not yet handed to the kernel.
    send_queue: Vec<u8>,
    /// Bytes handed to the kernel (from `send_off` on while a send is in flight).
    send_buf: Vec<u8>,
    send_off: usize,
    send_in_flight: bool,
    send_error: Option<i32>,
    writer: Option<Waker>,
    /// The stream was dropped: cancel what is in flight, then close.
    dropped: bool,
    cancel_sent: bool,
    /// On the driver's list of connections with something to submit.
    queued: bool,
}

impl Conn {
    fn in_flight(&self) -> bool {
        self.recv == Recv::Armed || self.send_in_flight
    }

    fn unread(&self) -> usize {
        self.input.len() - self.input_start
    }

    fn unsent(&self) -> usize {
        self.send_queue.len() + (self.send_buf.len() - self.send_off)
    }
}

/// The provided-buffer ring (`IORING_REGISTER_PBUF_RING`): the kernel takes a buffer from it for
/// each completed receive, and the driver gives it back once the bytes are copied out.
struct BufPool {
    /// Page-aligned ring of [`POOL_BUFFERS`] entries, shared with the kernel.
    ring: *mut types::BufRingEntry,
    buffers: Box<[u8]>,
    tail: u16,
}

impl BufPool {
    const RING_LAYOUT: std::alloc::Layout = match std::alloc::Layout::from_size_align(
        POOL_BUFFERS as usize * std::mem::size_of::<types::BufRingEntry>(),
        4096,
    ) {
        Ok(layout) => layout,
        Err(_) => panic!("buffer ring layout"),
    };

    fn new() -> BufPool {
        // SAFETY: a non-zero size; zeroed memory is a valid ring (the kernel reads entries up
        // to the tail only).
        let ring: *mut types::BufRingEntry =
            unsafe { std::alloc::alloc_zeroed(Self::RING_LAYOUT) }.cast();
        if ring.is_null() {
            std::alloc::handle_alloc_error(Self::RING_LAYOUT);
        }
        let mut pool = BufPool {
            ring,
            buffers: vec![0u8; POOL_BUFFERS as usize * POOL_BUFFER_SIZE].into_boxed_slice(),
            tail: 0,
        };
        for bid in 0..POOL_BUFFERS {
            pool.give_back(bid);
        }
        pool
    }

    /// Puts a buffer (back) on the ring for the kernel.
    fn give_back(&mut self, bid: u16) {
        let index = (self.tail & (POOL_BUFFERS - 1)) as usize;
        let addr = self.buffers.as_mut_ptr() as u64 + bid as u64 * POOL_BUFFER_SIZE as u64;
        // SAFETY: `index` is within the ring; the kernel reads an entry only once the tail
        // (published below, with release ordering) covers it.
        unsafe {
            let entry = &mut *self.ring.add(index);
            entry.set_addr(addr);
            entry.set_len(POOL_BUFFER_SIZE as u32);
            entry.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
        // SAFETY: the tail field of the ring's first entry, aligned for a u16, shared with the
        // kernel, which reads it atomically.
        unsafe {
            let tail = types::BufRingEntry::tail(self.ring) as *mut u16;
            AtomicU16::from_ptr(tail).store(self.tail, Ordering::Release);
        }
    }

    fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        let start = bid as usize * POOL_BUFFER_SIZE;
        &self.buffers[start..start + len.min(POOL_BUFFER_SIZE)]
    }
}

impl Drop for BufPool {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ring.cast(), Self::RING_LAYOUT) }
    }
}

struct Driver {
    /// Dropped by hand (see `Drop`): closed before the buffers it may write to are freed, or
    /// leaked with them.
    ring: ManuallyDrop<IoUring>,
    pool: ManuallyDrop<BufPool>,
    /// Connections by slot (the slot is in each operation's user data).
    conns: Vec<Option<Conn>>,
    free: Vec<u32>,
    /// Live (not dropped) connections' slots by socket, for busy scripts (see
    /// [`install_busy_hooks`]).
    by_fd: std::collections::HashMap<RawFd, u32>,
    /// Slots with something to submit.
    pending: Vec<u32>,
    /// The driver task, woken when `pending` gets its first slot.
    waker: Option<Waker>,
    /// Completions taken off the ring, handled after its borrow ends (kept for its capacity).
    completed: Vec<(u64, i32, u32)>,
}

/// A server's ring and its connections (see the module documentation).
pub struct Uring {
    driver: RefCell<Driver>,
}

impl Uring {
    /// Sets up the ring and its receive buffers. Fails where io_uring is missing or forbidden
    /// (a kernel before 6.0, a seccomp profile, `kernel.io_uring_disabled`); the server then
    /// uses tokio's sockets.
    pub fn new() -> io::Result<Rc<Uring>> {
        let ring = IoUring::builder()
            .setup_coop_taskrun()
            .setup_cqsize(RING_ENTRIES * 2)
            .build(RING_ENTRIES)?;
        let pool = BufPool::new();
        // SAFETY: the ring memory stays allocated as long as the ring (the driver drops the
        // ring first, and leaks both if operations are still in flight then).
        unsafe {
            ring.submitter().register_buf_ring_with_flags(
                pool.ring as u64,
                POOL_BUFFERS,
                POOL_GROUP,
                0,
            )?;
        }
        let uring = Rc::new(Uring {
            driver: RefCell::new(Driver {
                ring: ManuallyDrop::new(ring),
                pool: ManuallyDrop::new(pool),
                conns: Vec::new(),
                free: Vec::new(),
                by_fd: std::collections::HashMap::new(),
                pending: Vec::new(),
                waker: None,
                completed: Vec::new(),
            }),
        });
        install_busy_hooks(&uring);
        Ok(uring)
    }

    /// Takes over an accepted connection's socket (tokio stops watching it).
    pub fn adopt_tcp(self: &Rc<Self>, stream: tokio::net::TcpStream) -> io::Result<UringStream> {
        let std = stream.into_std()?;
        Ok(self.adopt(std.into()))
    }

    /// Takes over an accepted unix-socket connection.
    pub fn adopt_unix(self: &Rc<Self>, stream: tokio::net::UnixStream) -> io::Result<UringStream> {
        let std = stream.into_std()?;
        Ok(self.adopt(std.into()))
    }

    fn adopt(self: &Rc<Self>, fd: OwnedFd) -> UringStream {
        let mut d = self.driver.borrow_mut();
        let raw = fd.as_raw_fd();
        let conn = Conn {
            fd,
            input: Vec::new(),
            input_start: 0,
            recv: Recv::Idle,
            pausing: false,
            reader: None,
            send_queue: Vec::new(),
            send_buf: Vec::new(),
            send_off: 0,
            send_in_flight: false,
            send_error: None,
            writer: None,
            dropped: false,
            cancel_sent: false,
            queued: false,
        };
        let slot = match d.free.pop() {
            Some(slot) => {
                d.conns[slot as usize] = Some(conn);
                slot
            }
            None => {
                d.conns.push(Some(conn));
                (d.conns.len() - 1) as u32
            }
        };
        d.by_fd.insert(raw, slot);
        // Arm the receive now: the client's first request is usually on its way.
        d.queue(slot);
        UringStream {
            uring: self.clone(),
            slot,
        }
    }
}

impl Driver {
    fn conn(&mut self, slot: u32) -> &mut Conn {
        self.conns[slot as usize]
            .as_mut()
            .expect("a live stream's connection")
    }

    /// Puts a connection on the list of those with something to submit.
    fn queue(&mut self, slot: u32) {
        let conn = self.conn(slot);
        if conn.queued {
            return;
        }
        conn.queued = true;
        if self.pending.is_empty() {
            if let Some(waker) = &self.waker {
                waker.wake_by_ref();
            }
        }
        self.pending.push(slot);
    }

    /// Pushes an entry, submitting first when the submission queue is full.
    fn push(&mut self, entry: squeue::Entry) {
        loop {
            // SAFETY: every entry points into a connection's send buffer, which stays
            // allocated and unchanged until the entry's completion is seen (see the module
            // documentation); receives write only into the pool.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return;
            }
            self.submit();
        }
    }

    fn submit(&mut self) {
        loop {
            match self.ring.submit() {
                Ok(_) => return,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                // The completion queue is full (EBUSY): take completions off it, then retry.
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => self.take_completions(),
                Err(_) => return,
            }
        }
    }

    fn cancel(&mut self, slot: u32, op: u64) {
        self.push(
            opcode::AsyncCancel::new(user_data(slot, op))
                .build()
                .user_data(user_data(slot, OP_CANCEL)),
        );
    }

    /// Turns every queued connection's needs into entries.
    fn prepare(&mut self) {
        let mut pending = std::mem::take(&mut self.pending);
        for &slot in &pending {
            let Some(conn) = self.conns[slot as usize].as_mut() else {
                continue;
            };
            conn.queued = false;
            let fd = types::Fd(conn.fd.as_raw_fd());
            if conn.dropped {
                if !conn.in_flight() {
                    // Nothing of it is in the kernel any more: close the socket.
                    self.conns[slot as usize] = None;
                    self.free.push(slot);
                } else if !conn.cancel_sent {
                    conn.cancel_sent = true;
                    let recv = conn.recv == Recv::Armed && !conn.pausing;
                    let send = conn.send_in_flight;
                    if recv {
                        self.cancel(slot, OP_RECV);
                    }
                    if send {
                        self.cancel(slot, OP_SEND);
                    }
                }
                continue;
            }
            let mut entries: [Option<squeue::Entry>; 2] = [None, None];
            match conn.recv {
                Recv::Idle if conn.unread() < INPUT_LIMIT => {
                    conn.recv = Recv::Armed;
                    conn.pausing = false;
                    entries[0] = Some(
                        opcode::RecvMulti::new(fd, POOL_GROUP)
                            .build()
                            .user_data(user_data(slot, OP_RECV)),
                    );
                }
                Recv::Armed if conn.unread() >= INPUT_LIMIT && !conn.pausing => {
                    conn.pausing = true;
                    entries[0] = Some(
                        opcode::AsyncCancel::new(user_data(slot, OP_RECV))
                            .build()
                            .user_data(user_data(slot, OP_CANCEL)),
                    );
                }
                _ => {}
            }
            if !conn.send_in_flight && conn.send_error.is_none() {
                if conn.send_off >= conn.send_buf.len() && !conn.send_queue.is_empty() {
                    conn.send_buf.clear();
                    std::mem::swap(&mut conn.send_buf, &mut conn.send_queue);
                    conn.send_off = 0;
                }
                if conn.send_off < conn.send_buf.len() {
                    let rest = &conn.send_buf[conn.send_off..];
                    conn.send_in_flight = true;
                    entries[1] = Some(
                        opcode::Send::new(fd, rest.as_ptr(), rest.len() as u32)
                            .flags(libc::MSG_NOSIGNAL)
                            .build()
                            .user_data(user_data(slot, OP_SEND)),
                    );
                }
            }
            for entry in entries.into_iter().flatten() {
                self.push(entry);
            }
        }
        pending.clear();
        // Nothing above queues (it only reads the list), so the list is empty; keep its room.
        if self.pending.is_empty() {
            self.pending = pending;
        }
    }

    /// Moves the ring's completions into `completed`.
    fn take_completions(&mut self) {
        let mut completion = self.ring.completion();
        completion.sync();
        for cqe in completion {
            self.completed
                .push((cqe.user_data(), cqe.result(), cqe.flags()));
        }
    }

    /// Applies what the kernel completed: received bytes, sent bytes, errors; wakes the tasks.
    fn handle_completions(&mut self) {
        let completed = std::mem::take(&mut self.completed);
        for &(data, result, flags) in &completed {
            let slot = (data >> 2) as u32;
            let op = data & 3;
            if op == OP_CANCEL {
                continue;
            }
            // A received buffer goes back to the pool whatever becomes of its bytes.
            let buffer = if op == OP_RECV {
                cqueue::buffer_select(flags)
            } else {
                None
            };
            let Some(conn) = self.conns[slot as usize].as_mut() else {
                if let Some(bid) = buffer {
                    self.pool.give_back(bid);
                }
                continue;
            };
            let mut again = conn.dropped;
            if op == OP_RECV {
                match result {
                    n if n > 0 => {
                        if let Some(bid) = buffer {
                            if !conn.dropped {
                                conn.input
                                    .extend_from_slice(self.pool.bytes(bid, n as usize));
                                // Over the limit: `prepare` stops the receive.
                                again |= conn.unread() >= INPUT_LIMIT;
                            }
                        }
                    }
                    0 => conn.recv = Recv::Eof,
                    // Out of pool buffers, cancelled (paused or dropped), interrupted: not an
                    // answer from the peer; the receive is re-armed below if it ended.
                    e if e == -libc::ENOBUFS
                        || e == -libc::ECANCELED
                        || e == -libc::EAGAIN
                        || e == -libc::EINTR => {}
                    e => conn.recv = Recv::Failed(-e),
                }
                if !cqueue::more(flags) && conn.recv == Recv::Armed {
                    conn.recv = Recv::Idle;
                    again = true;
                }
                if let Some(reader) = conn.reader.take() {
                    reader.wake();
                }
                if let Some(bid) = buffer {
                    self.pool.give_back(bid);
                }
            } else {
                conn.send_in_flight = false;
                match result {
                    n if n >= 0 => {
                        conn.send_off += n as usize;
                        if conn.send_off >= conn.send_buf.len() {
                            conn.send_buf.clear();
                            conn.send_off = 0;
                        }
                        again |= conn.unsent() > 0;
                    }
                    e if e == -libc::EAGAIN || e == -libc::EINTR => again = true,
                    e => conn.send_error = Some(-e),
                }
                if let Some(writer) = conn.writer.take() {
                    writer.wake();
                }
            }
            if again {
                self.queue(slot);
            }
        }
        self.completed = completed;
        self.completed.clear();
    }

    /// One round: submit what is queued, apply what completed, until nothing is left to submit.
    fn turn(&mut self) {
        for _ in 0..64 {
            if !self.pending.is_empty() {
                self.prepare();
            }
            if !self.ring.submission().is_empty() {
                self.submit();
            }
            self.take_completions();
            self.handle_completions();
            if self.pending.is_empty() {
                break;
            }
        }
    }

    fn has_completions(&mut self) -> bool {
        let mut completion = self.ring.completion();
        completion.sync();
        !completion.is_empty()
    }
}

impl Drop for Driver {
    /// The server stops: cancel what is still in flight and wait (briefly) for the kernel to be
    /// done with the buffers. If anything is still in flight after that, the ring, the pool and
    /// the connections are leaked, never freed under the kernel.
    fn drop(&mut self) {
        let mut cancels = Vec::new();
        for (slot, conn) in self.conns.iter().enumerate() {
            let Some(conn) = conn else { continue };
            if conn.recv == Recv::Armed {
                cancels.push((slot as u32, OP_RECV));
            }
            if conn.send_in_flight {
                cancels.push((slot as u32, OP_SEND));
            }
        }
        for (slot, op) in cancels {
            self.cancel(slot, op);
        }
        let timeout = types::Timespec::new().nsec(50_000_000);
        for _ in 0..20 {
            if !self.conns.iter().flatten().any(Conn::in_flight) {
                break;
            }
            let args = types::SubmitArgs::new().timespec(&timeout);
            let _ = self.ring.submitter().submit_with_args(1, &args);
            self.take_completions();
            for (data, _, flags) in std::mem::take(&mut self.completed) {
                let (slot, op) = ((data >> 2) as usize, data & 3);
                if let Some(Some(conn)) = self.conns.get_mut(slot) {
                    match op {
                        OP_RECV if !cqueue::more(flags) => conn.recv = Recv::Idle,
                        OP_SEND => conn.send_in_flight = false,
                        _ => {}
                    }
                }
            }
        }
        if self.conns.iter().flatten().any(Conn::in_flight) {
            // The kernel may still write into the pool or read send buffers: leak them all.
            std::mem::forget(std::mem::take(&mut self.conns));
            return;
        }
        // SAFETY: nothing is in flight; the ring goes first, then the buffers it used, and
        // neither is touched again.
        unsafe {
            ManuallyDrop::drop(&mut self.ring);
            ManuallyDrop::drop(&mut self.pool);
        }
    }
}

/// Runs the ring for a server: submits what the connections queued, hands back what completed,
/// and sleeps in tokio's epoll on the ring's descriptor until more completes or is queued.
pub async fn run(uring: Rc<Uring>) {
    let fd = uring.driver.borrow().ring.as_raw_fd();
    // SAFETY: the descriptor is the ring's, which `uring` (held by this task, and declared
    // before `ring_fd`, so dropped after it) keeps open for the AsyncFd's whole life.
    let ring_fd = match unsafe { AsyncFd::register_with_interest(RingFd(fd), Interest::READABLE) } {
        Ok(fd) => fd,
        Err(_) => return,
    };
    loop {
        uring.driver.borrow_mut().turn();
        poll_fn(|cx| {
            {
                let mut d = uring.driver.borrow_mut();
                if !d.pending.is_empty() {
                    return Poll::Ready(());
                }
                match &d.waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => d.waker = Some(cx.waker().clone()),
                }
            }
            loop {
                match ring_fd.poll_read_ready(cx) {
                    Poll::Ready(Ok(mut guard)) => {
                        // No system call since the check: nothing can be posted in between on
                        // this thread, and a post from elsewhere is a new epoll edge.
                        if uring.driver.borrow_mut().has_completions() {
                            return Poll::Ready(());
                        }
                        guard.clear_ready();
                    }
                    Poll::Ready(Err(_)) => return Poll::Ready(()),
                    Poll::Pending => return Poll::Pending,
                }
            }
        })
        .await;
    }
}

/// The ring's descriptor, as tokio's epoll watches it (the ring owns and closes it).
struct RingFd(RawFd);

impl AsRawFd for RingFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// A connection served through the ring (see the module documentation).
pub struct UringStream {
    uring: Rc<Uring>,
    slot: u32,
}

impl AsyncRead for UringStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut d = self.uring.driver.borrow_mut();
        let conn = d.conn(self.slot);
        if conn.unread() > 0 {
            let n = conn.unread().min(buf.remaining());
            buf.put_slice(&conn.input[conn.input_start..conn.input_start + n]);
            conn.input_start += n;
            if conn.unread() == 0 {
                conn.input_start = 0;
                if conn.input.capacity() > POOL_BUFFER_SIZE {
                    // A burst does not stay allocated on an idle connection.
                    conn.input = Vec::new();
                } else {
                    conn.input.clear();
                }
            }
            if conn.recv == Recv::Idle {
                // Stopped over the input limit, or out of pool buffers: arm it again.
                d.queue(self.slot);
            }
            return Poll::Ready(Ok(()));
        }
        match conn.recv {
            Recv::Eof => Poll::Ready(Ok(())),
            Recv::Failed(errno) => Poll::Ready(Err(io::Error::from_raw_os_error(errno))),
            Recv::Idle | Recv::Armed => {
                match &conn.reader {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => conn.reader = Some(cx.waker().clone()),
                }
                if conn.recv == Recv::Idle {
                    d.queue(self.slot);
                }
                Poll::Pending
            }
        }
    }
}

impl AsyncWrite for UringStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut d = self.uring.driver.borrow_mut();
        let conn = d.conn(self.slot);
        if let Some(errno) = conn.send_error {
            return Poll::Ready(Err(io::Error::from_raw_os_error(errno)));
        }
        let unsent = conn.unsent();
        if unsent >= SEND_WINDOW {
            match &conn.writer {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => conn.writer = Some(cx.waker().clone()),
            }
            return Poll::Pending;
        }
        let n = buf.len().min(SEND_WINDOW - unsent);
        conn.send_queue.extend_from_slice(&buf[..n]);
        d.queue(self.slot);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut d = self.uring.driver.borrow_mut();
        let conn = d.conn(self.slot);
        if let Some(errno) = conn.send_error {
            return Poll::Ready(Err(io::Error::from_raw_os_error(errno)));
        }
        if conn.unsent() == 0 {
            return Poll::Ready(Ok(()));
        }
        match &conn.writer {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => conn.writer = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The socket closes when the stream is dropped; what was written goes first.
        self.poll_flush(cx)
    }
}

impl Drop for UringStream {
    fn drop(&mut self) {
        let mut d = self.uring.driver.borrow_mut();
        let conn = d.conn(self.slot);
        conn.dropped = true;
        conn.reader = None;
        conn.writer = None;
        let fd = conn.fd.as_raw_fd();
        d.by_fd.remove(&fd);
        d.queue(self.slot);
    }
}

thread_local! {
    /// The rings of the servers on this thread, for busy scripts (see [`install_busy_hooks`]).
    static RINGS: RefCell<Vec<std::rc::Weak<Uring>>> = const { RefCell::new(Vec::new()) };
}

/// Lets a busy script (`crate::services::busy`) serve this thread's ring clients: while a script runs,
/// the driver task cannot, so the script's hook reaps the ring itself (a submit runs the
/// kernel's pending completions), takes an idle client's received bytes, and queues its replies
/// behind what the client's connection already queued (so they cannot overtake them).
fn install_busy_hooks(uring: &Rc<Uring>) {
    RINGS.with(|rings| {
        let mut rings = rings.borrow_mut();
        rings.retain(|r| r.strong_count() > 0);
        rings.push(Rc::downgrade(uring));
    });
    crate::services::busy::install_ring_hooks(crate::services::busy::RingHooks {
        take_input: busy_take_input,
        send: busy_send,
    });
}

/// The ring and slot serving `fd` on this thread, if any.
fn find_ring_conn(fd: RawFd) -> Option<(Rc<Uring>, u32)> {
    RINGS.with(|rings| {
        rings.borrow().iter().find_map(|ring| {
            let ring = ring.upgrade()?;
            let slot = *ring.driver.try_borrow().ok()?.by_fd.get(&fd)?;
            Some((ring, slot))
        })
    })
}

fn busy_take_input(fd: RawFd, handle: &crate::model::client::ClientHandle) -> Option<usize> {
    let (ring, slot) = find_ring_conn(fd)?;
    let mut d = ring.driver.borrow_mut();
    // A system call runs the completions the kernel has pending for this thread.
    d.submit();
    d.turn();
    let conn = d.conn(slot);
    let n = conn.unread();
    if n > 0 {
        handle.with_stolen(|stolen| stolen.extend_from_slice(&conn.input[conn.input_start..]));
        conn.input.clear();
        conn.input_start = 0;
        if conn.recv == Recv::Idle {
            d.queue(slot);
            d.turn();
        }
    }
    Some(n)
}

fn busy_send(fd: RawFd, bytes: &[u8]) -> bool {
    let Some((ring, slot)) = find_ring_conn(fd) else {
        return false;
    };
    let mut d = ring.driver.borrow_mut();
    d.conn(slot).send_queue.extend_from_slice(bytes);
    d.queue(slot);
    d.turn();
    true
}
