//! embedis's own cluster bus: how embedis nodes of one cluster learn each other's IDs,
//! addresses, roles, epochs and slots. It is not Redis's binary bus (`clusterMsg`): an embedis
//! node cannot join a cluster of redis-servers, nor the reverse (DEVELOPERS.md says what that
//! would take). There is no failure detection and no failover.
//!
//! Each node listens on its bus port (`cluster-port`, default the client port + 10000). For
//! every other node it knows (from CLUSTER MEET, or named in another node's gossip) it keeps a
//! connection and, every [`PERIOD`], sends its [`View`] — its own entry and slots and the nodes
//! it knows — and reads the other node's view in reply; an inbound connection answers each view
//! with its own. Both sides merge what they receive ([`crate::model::cluster_view::Cluster::merge`]: the
//! higher config epoch wins a slot). So a node met by one member learns the others from the
//! gossip and connects to them itself, and a change (ADDSLOTS, SETSLOT NODE, a new epoch)
//! reaches every node within a period or two.
//!
//! With `tls-cluster yes` the bus speaks TLS, as Redis's does: a node accepts only peers that
//! show a certificate signed by the CA (whatever `tls-auth-clients` says), and checks the
//! chain of the node it dials with the same context a replica uses for its primary. The
//! setting is read for every new connection.
//!
//! The tasks run on the engine's thread and borrow the engine only between awaits, as the
//! connection tasks do. Only the single-threaded server runs the bus (not `io-threads` > 1).

use std::cell::RefCell;
use std::collections::HashSet;
use std::net::IpAddr;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::engine::Engine;
use crate::model::cluster_view::{View, MYSELF};

/// What the bus needs of the event loop's shared state: the engine (given by the I/O layer, so
/// that this module does not depend on it).
pub trait EngineCell: 'static {
    fn engine(&self) -> &RefCell<Engine>;
}

/// How often a node sends its view to each other node.
pub const PERIOD: Duration = Duration::from_millis(100);

/// How long a connection attempt or a reply may take before the link counts as down.
const TIMEOUT: Duration = Duration::from_secs(2);

/// The longest message accepted (a view of a very large cluster still fits).
const MAX_LINES: usize = 10_000;

/// Runs the bus of the server whose client listener is on `ip`: the listener and the dialers.
/// Returns when the listener cannot be bound (logged), else never (the server's runtime ends it).
pub async fn run<S: EngineCell>(shared: Rc<S>, ip: IpAddr) {
    let port = {
        let engine = shared.engine().borrow();
        crate::commands::cluster::bus_port(&engine.server)
    };
    let listener = match TcpListener::bind((ip, port)).await {
        Ok(listener) => listener,
        Err(e) => {
            let engine = shared.engine().borrow();
            engine.server.log.warning(&format!(
                "Could not bind the cluster bus on port {port}: {e}"
            ));
            return;
        }
    };
    tokio::task::spawn_local(accept(listener, shared.clone()));
    let dialing: Rc<RefCell<HashSet<(u32, String, u16)>>> = Rc::default();
    loop {
        let peers: Vec<(u32, String, u16)> = {
            let engine = shared.engine().borrow();
            engine
                .server
                .cluster
                .known()
                .filter(|(n, node)| *n != MYSELF && !node.ip.is_empty() && node.bus_port != 0)
                .map(|(n, node)| (n, node.ip.clone(), node.bus_port))
                .collect()
        };
        for peer in peers {
            if dialing.borrow_mut().insert(peer.clone()) {
                tokio::task::spawn_local(dial(shared.clone(), peer, dialing.clone()));
            }
        }
        tokio::time::sleep(PERIOD).await;
    }
}

async fn accept<S: EngineCell>(listener: TcpListener, shared: Rc<S>) {
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            tokio::time::sleep(PERIOD).await;
            continue;
        };
        let peer_ip = peer.ip().to_string();
        let tls = {
            let engine = shared.engine().borrow();
            engine
                .server
                .config
                .tls
                .cluster
                .then(|| engine.server.tls.peer_acceptor())
        };
        match tls {
            None => {
                tokio::task::spawn_local(serve_inbound(stream, peer_ip, shared.clone()));
            }
            // TLS wanted but no context to serve it with: refused.
            Some(None) => {}
            Some(Some(acceptor)) => {
                let shared = shared.clone();
                tokio::task::spawn_local(async move {
                    if let Ok(Ok(stream)) =
                        tokio::time::timeout(TIMEOUT, acceptor.accept(stream)).await
                    {
                        serve_inbound(stream, peer_ip, shared).await;
                    }
                });
            }
        }
    }
}

/// Makes the dialled connection a TLS one under `tls-cluster`; None if that fails.
async fn secure<S: EngineCell>(shared: &S, stream: TcpStream, ip: &str) -> Option<Box<dyn Link>> {
    let tls = {
        let engine = shared.engine().borrow();
        engine
            .server
            .config
            .tls
            .cluster
            .then(|| engine.server.tls.connector())
    };
    match tls {
        None => Some(Box::new(stream)),
        Some(connector) => {
            let connect = connector?.connect(crate::base::tls::server_name(ip), stream);
            let stream = tokio::time::timeout(TIMEOUT, connect).await.ok()?.ok()?;
            Some(Box::new(stream))
        }
    }
}

/// A bus connection, plain or TLS.
trait Link: AsyncRead + AsyncWrite + Unpin {}
impl<T: AsyncRead + AsyncWrite + Unpin> Link for T {}

/// Reads one message (the lines before `end`); `None` at end of stream or on a bad message.
async fn read_view<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> Option<View> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let line = line.trim_end().to_string();
        if line == "end" {
            return View::decode(&lines);
        }
        lines.push(line);
        if lines.len() > MAX_LINES {
            return None;
        }
    }
}

/// An inbound link: each view received is merged and answered with this node's own.
async fn serve_inbound<S: EngineCell, T: AsyncRead + AsyncWrite>(
    stream: T,
    peer_ip: String,
    shared: Rc<S>,
) {
    let (read, mut write) = tokio::io::split(stream);
    let mut reader = BufReader::new(read);
    while let Some(view) = read_view(&mut reader).await {
        let reply = {
            let mut engine = shared.engine().borrow_mut();
            let server = &mut engine.server;
            crate::commands::cluster::refresh_myself(server);
            let now = server.clock.now_ms();
            if server.cluster.merge(&view, &peer_ip, None, now).is_none() {
                return;
            }
            server.cluster.messages_sent += 1;
            server.cluster.view_for(&peer_ip).encode()
        };
        // The flush sends what TLS keeps of the message.
        if write.write_all(reply.as_bytes()).await.is_err() || write.flush().await.is_err() {
            return;
        }
    }
}

/// The outbound link to node `number` at `ip`:`bus_port`, for as long as that node is known
/// there: connect, then send this node's view every period and merge the reply.
async fn dial<S: EngineCell>(
    shared: Rc<S>,
    peer: (u32, String, u16),
    dialing: Rc<RefCell<HashSet<(u32, String, u16)>>>,
) {
    let (number, ip, bus_port) = peer.clone();
    let still_known = |shared: &S| {
        let engine = shared.engine().borrow();
        engine
            .server
            .cluster
            .node(number)
            .is_some_and(|n| n.ip == ip && n.bus_port == bus_port)
    };
    let set_connected = |shared: &S, up: bool| {
        let mut engine = shared.engine().borrow_mut();
        if let Some(Some(node)) = engine.server.cluster.nodes.get_mut(number as usize) {
            node.connected = up;
        }
    };
    'link: while still_known(&shared) {
        let connect = tokio::time::timeout(TIMEOUT, TcpStream::connect((ip.as_str(), bus_port)));
        let stream = match connect.await {
            Ok(Ok(stream)) => stream,
            _ => {
                set_connected(&shared, false);
                tokio::time::sleep(PERIOD * 5).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let Some(stream) = secure(&*shared, stream, &ip).await else {
            set_connected(&shared, false);
            tokio::time::sleep(PERIOD * 5).await;
            continue;
        };
        let (read, mut write) = tokio::io::split(stream);
        let mut reader = BufReader::new(read);
        while still_known(&shared) {
            let message = {
                let mut engine = shared.engine().borrow_mut();
                let server = &mut engine.server;
                crate::commands::cluster::refresh_myself(server);
                let now = server.clock.now_ms();
                server.cluster.messages_sent += 1;
                if let Some(Some(node)) = server.cluster.nodes.get_mut(number as usize) {
                    node.ping_sent = now;
                }
                server.cluster.view_for(&ip).encode()
            };
            if write.write_all(message.as_bytes()).await.is_err() || write.flush().await.is_err() {
                set_connected(&shared, false);
                continue 'link;
            }
            let Ok(Some(view)) = tokio::time::timeout(TIMEOUT, read_view(&mut reader)).await else {
                set_connected(&shared, false);
                continue 'link;
            };
            {
                let mut engine = shared.engine().borrow_mut();
                let server = &mut engine.server;
                let now = server.clock.now_ms();
                if server
                    .cluster
                    .merge(&view, &ip, Some(number), now)
                    .is_none()
                {
                    break 'link;
                }
                // Answered: no ping outstanding (CLUSTER NODES shows 0, as Redis does).
                if let Some(Some(node)) = server.cluster.nodes.get_mut(number as usize) {
                    node.ping_sent = 0;
                }
            }
            tokio::time::sleep(PERIOD).await;
        }
    }
    dialing.borrow_mut().remove(&peer);
}
