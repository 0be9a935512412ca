//! A TCP proxy in front of a primary that can hold its replication links: the failover-loss
//! tests (tests/it/failover_loss.rs) put it between a primary and everything that reaches the
//! primary through its monitored address — the replicas' links and the sentinels — so that the
//! same mechanism cuts replication for embedis-server and redis-server alike, with neither
//! server knowing.
//!
//! A connection is a replication link once its client sent `REPLCONF listening-port <port>`
//! (a replica does, before its PSYNC; a sentinel or a lock client never does), and the link is
//! named by that port, the replica's own. Holding a replica's link stops the bytes from the
//! primary to that replica after the proxy read them, until it is released: the primary goes
//! on writing (its socket buffers and the proxy absorb a test's few kilobytes) and the replica
//! sees a silent link, as behind a stalled network path. The other direction always flows, so
//! the replica's `REPLCONF ACK`s still tell the primary how far it got. Other connections are
//! never held: the sentinels keep seeing the primary, which is what the tests need (they pause
//! the primary's process itself to make it fail).
//!
//! Sentinels monitor the proxy's address because a replica reports its primary as the address
//! it connected to; a sentinel that saw replicas report another address than the primary's
//! would, after `failover-timeout`, repoint them at the primary directly (`+fix-slave-config`),
//! around the proxy.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// What the forwarding threads share: the held links (by replica port), the open sockets (shut
/// down when the proxy goes, which ends their threads) and the stop flag.
#[derive(Default)]
struct Shared {
    held: Mutex<HashSet<u16>>,
    released: Condvar,
    sockets: Mutex<Vec<TcpStream>>,
    stopping: AtomicBool,
}

/// The proxy: a listener on 127.0.0.1 forwarding each connection to the primary.
pub struct LinkProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl LinkProxy {
    /// Starts forwarding connections to `primary`.
    pub fn start(primary: SocketAddr) -> LinkProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        let accepting = shared.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if accepting.stopping.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(primary) else {
                    continue;
                };
                connect(&accepting, client, server);
            }
        });
        LinkProxy { addr, shared }
    }

    /// The address to give replicas and sentinels instead of the primary's.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the primary's bytes to the replica that listens on `replica_port`: bytes the proxy
    /// reads from the primary after this call wait in the proxy.
    pub fn hold(&self, replica_port: u16) {
        self.shared.held.lock().unwrap().insert(replica_port);
    }

    /// Lets the held bytes, and what follows, through to the replica again.
    pub fn release(&self, replica_port: u16) {
        self.shared.held.lock().unwrap().remove(&replica_port);
        self.shared.released.notify_all();
    }
}

impl Drop for LinkProxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.shared.released.notify_all();
        for socket in self.shared.sockets.lock().unwrap().drain(..) {
            let _ = socket.shutdown(Shutdown::Both);
        }
        // Wakes the accepting thread, which then sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Starts the two forwarding threads of one proxied connection.
fn connect(shared: &Arc<Shared>, client: TcpStream, server: TcpStream) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    {
        let mut sockets = shared.sockets.lock().unwrap();
        sockets.push(client.try_clone().unwrap());
        sockets.push(server.try_clone().unwrap());
    }
    // 0 until the client names itself a replica.
    let replica = Arc::new(AtomicU32::new(0));
    let (c_in, s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let named = replica.clone();
    std::thread::spawn(move || client_to_server(c_in, s_out, &named));
    let shared = shared.clone();
    std::thread::spawn(move || server_to_client(server, client, &replica, &shared));
}

/// Forwards the client's bytes, reading the replica's port from its `REPLCONF listening-port`
/// before the bytes go on (so the primary's answers to it, and the stream after PSYNC, already
/// know whose link they are on).
fn client_to_server(mut from: TcpStream, mut to: TcpStream, replica: &AtomicU32) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if replica.load(Ordering::SeqCst) == 0 && seen.len() < 4096 {
            seen.extend_from_slice(&buf[..n]);
            if let Some(port) = listening_port(&seen) {
                replica.store(u32::from(port), Ordering::SeqCst);
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// Forwards the primary's bytes, each read waiting while its replica's link is held.
fn server_to_client(mut from: TcpStream, mut to: TcpStream, replica: &AtomicU32, shared: &Shared) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        // The check comes after the read: bytes the primary wrote after `hold` returned are
        // read after it too, so none of them slips through.
        let mut held = shared.held.lock().unwrap();
        loop {
            let port = replica.load(Ordering::SeqCst) as u16;
            if shared.stopping.load(Ordering::SeqCst) {
                return;
            }
            if port == 0 || !held.contains(&port) {
                break;
            }
            held = shared
                .released
                .wait_timeout(held, Duration::from_millis(100))
                .unwrap()
                .0;
        }
        drop(held);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// The port in a RESP `REPLCONF listening-port <port>` among the first bytes a client sent.
fn listening_port(bytes: &[u8]) -> Option<u16> {
    let text = String::from_utf8_lossy(bytes).to_ascii_lowercase();
    let after = text.split_once("\r\nlistening-port\r\n")?.1;
    // The port's bulk header (`$5\r\n`), then its digits.
    let digits = after.split_once("\r\n")?.1.split_once("\r\n")?.0;
    digits.parse().ok()
}
