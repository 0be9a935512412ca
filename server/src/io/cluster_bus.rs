//! The cluster bus's sockets: the listener on the bus port (`cluster-port`, default the client
//! port + 10000), the links this node dials, and the frames of Redis's binary bus protocol
//! (`embedis_bus`) on both. What the messages mean is the state machine's
//! (`crate::services::cluster`, reached through the engine): this task carries out its
//! [`BusAction`]s — dial, send, close — reports what happens on the sockets, and runs its tick
//! every 100 ms, as Redis runs `clusterCron`.
//!
//! Each link has a reader task (frames in, one message at a time to the engine) and a writer
//! task (frames out, in order). A frame with a bad signature or length closes its link, as
//! in Redis; a message Redis would ignore (a bad type length, another version) is ignored.
//!
//! With `tls-cluster yes` the bus speaks TLS, as Redis's does: a node accepts only peers that
//! show a certificate signed by the CA, and checks the chain of the node it dials with the
//! context a replica uses for its primary.
//!
//! The tasks run on the engine's thread and borrow the engine only between awaits, as the
//! connection tasks do: the server's one thread, or with `io-threads` > 1 the executor thread
//! (`crate::io::net_threaded`), which runs a runtime of its own for them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::IpAddr;
use std::rc::Rc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};

use crate::io::primary_link::EngineCell;
use crate::model::cluster_bus_state::BusAction;
use crate::model::cluster_view::LinkId;

/// The bus's tick (Redis runs `clusterCron` ten times a second).
pub const PERIOD: Duration = Duration::from_millis(100);

/// How long a connection attempt or a TLS handshake may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// A link as this task knows it: where its frames go, and how to stop its tasks.
struct LinkIo {
    /// The writer's queue; `None` while an outbound link is still connecting.
    tx: Option<mpsc::UnboundedSender<Vec<u8>>>,
    /// Frames queued before the connection came up.
    waiting: Vec<Vec<u8>>,
    stop: Rc<Notify>,
    /// Bytes handed to the writer and not written yet (the link's send buffer).
    queued: Rc<std::cell::Cell<usize>>,
}

impl LinkIo {
    fn new(tx: Option<mpsc::UnboundedSender<Vec<u8>>>, stop: Rc<Notify>) -> LinkIo {
        LinkIo {
            tx,
            waiting: Vec::new(),
            stop,
            queued: Rc::default(),
        }
    }
}

type Links = Rc<RefCell<HashMap<LinkId, LinkIo>>>;

/// Runs the bus of the server whose client listener is on `ip`: the listener, the tick and
/// the links. Returns when the listener cannot be bound (logged), else never.
pub async fn run<S: EngineCell + 'static>(shared: Rc<S>, ip: IpAddr) {
    let (port, wake) = {
        let engine = shared.engine_ref();
        let port = crate::services::cluster::bus_port(&engine.server);
        (port, engine.server.cluster.bus.wake.clone())
    };
    let listener = match TcpListener::bind((ip, port)).await {
        Ok(listener) => listener,
        Err(e) => {
            let engine = shared.engine_ref();
            engine.server.log.warning(&format!(
                "Could not bind the cluster bus on port {port}: {e}"
            ));
            return;
        }
    };
    let links: Links = Rc::default();
    tokio::task::spawn_local(accept(listener, shared.clone(), links.clone()));
    let mut tick = tokio::time::interval(PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let mut engine = shared.engine();
                engine.cluster_cron();
                check_send_buffers(&mut engine, &links);
                shared.after_work(&mut engine);
            }
            _ = wake.notified() => {}
        }
        let actions = shared.engine().cluster_actions();
        for action in actions {
            carry_out(&shared, &links, action);
        }
    }
}

/// One action of the state machine.
fn carry_out<S: EngineCell + 'static>(shared: &Rc<S>, links: &Links, action: BusAction) {
    match action {
        BusAction::Connect { link, ip, port } => {
            let stop = Rc::new(Notify::new());
            links
                .borrow_mut()
                .insert(link, LinkIo::new(None, stop.clone()));
            tokio::task::spawn_local(dial(shared.clone(), links.clone(), link, ip, port, stop));
        }
        BusAction::Send { link, message } => {
            let frame = embedis_bus::encode(&message);
            let mut links = links.borrow_mut();
            let Some(io) = links.get_mut(&link) else {
                return;
            };
            io.queued.set(io.queued.get() + frame.len());
            match &io.tx {
                Some(tx) => {
                    let _ = tx.send(frame);
                }
                None => io.waiting.push(frame),
            }
        }
        BusAction::Close { link } => {
            if let Some(io) = links.borrow_mut().remove(&link) {
                io.stop.notify_waiters();
                io.stop.notify_one();
            }
        }
    }
}

async fn accept<S: EngineCell + 'static>(listener: TcpListener, shared: Rc<S>, links: Links) {
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            tokio::time::sleep(PERIOD).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let local_ip = stream
            .local_addr()
            .map(|a| a.ip().to_string())
            .unwrap_or_default();
        let peer_ip = peer.ip().to_string();
        let tls = {
            let engine = shared.engine_ref();
            let tls = &engine.server;
            tls.config.tls.cluster.then(|| tls.tls.peer_acceptor())
        };
        let (shared, links) = (shared.clone(), links.clone());
        match tls {
            None => {
                tokio::task::spawn_local(serve_inbound(stream, peer_ip, local_ip, shared, links));
            }
            // TLS wanted but no context to serve it with: refused.
            Some(None) => {}
            Some(Some(acceptor)) => {
                tokio::task::spawn_local(async move {
                    let accepted = tokio::time::timeout(CONNECT_TIMEOUT, acceptor.accept(stream));
                    if let Ok(Ok(stream)) = accepted.await {
                        serve_inbound(stream, peer_ip, local_ip, shared, links).await;
                    }
                });
            }
        }
    }
}

/// An accepted connection: a link of its own, served until either side closes it.
async fn serve_inbound<S: EngineCell + 'static, T: AsyncRead + AsyncWrite + 'static>(
    stream: T,
    peer_ip: String,
    local_ip: String,
    shared: Rc<S>,
    links: Links,
) {
    let link = shared.engine().cluster_accepted(peer_ip, local_ip);
    let stop = Rc::new(Notify::new());
    let (tx, rx) = mpsc::unbounded_channel();
    links
        .borrow_mut()
        .insert(link, LinkIo::new(Some(tx), stop.clone()));
    serve_link(stream, link, shared, links, rx, stop).await;
}

/// Makes the dialled connection a TLS one under `tls-cluster`; None if that fails.
async fn secure<S: EngineCell>(shared: &S, stream: TcpStream) -> Option<Box<dyn Link>> {
    let tls = {
        let engine = shared.engine_ref();
        let server = &engine.server;
        server.config.tls.cluster.then(|| server.tls.connector())
    };
    match tls {
        None => Some(Box::new(stream)),
        Some(connector) => {
            let connect = connector?.connect(stream);
            let stream = tokio::time::timeout(CONNECT_TIMEOUT, connect)
                .await
                .ok()?
                .ok()?;
            Some(Box::new(stream))
        }
    }
}

/// A bus connection, plain or TLS.
trait Link: AsyncRead + AsyncWrite + Unpin {}
impl<T: AsyncRead + AsyncWrite + Unpin> Link for T {}

/// The outbound link `link` to `ip:port`: connect, tell the state machine, then serve it.
async fn dial<S: EngineCell + 'static>(
    shared: Rc<S>,
    links: Links,
    link: LinkId,
    ip: String,
    port: u16,
    stop: Rc<Notify>,
) {
    let connect = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect((ip.as_str(), port)));
    let stream = tokio::select! {
        connected = connect => match connected {
            Ok(Ok(stream)) => Some(stream),
            _ => None,
        },
        _ = stop.notified() => return,
    };
    let stream = match stream {
        Some(stream) => {
            let _ = stream.set_nodelay(true);
            let local_ip = stream
                .local_addr()
                .map(|a| a.ip().to_string())
                .unwrap_or_default();
            secure(&*shared, stream).await.map(|s| (s, local_ip))
        }
        None => None,
    };
    let Some((stream, local_ip)) = stream else {
        lost(&*shared, &links, link);
        return;
    };
    let (tx, rx) = mpsc::unbounded_channel();
    {
        let mut map = links.borrow_mut();
        let Some(io) = map.get_mut(&link) else {
            return;
        };
        for frame in io.waiting.drain(..) {
            let _ = tx.send(frame);
        }
        io.tx = Some(tx);
    }
    {
        let mut engine = shared.engine();
        engine.cluster_connected(link, local_ip);
        shared.after_work(&mut engine);
    }
    serve_link(stream, link, shared, links, rx, stop).await;
}

/// Each tick: the send buffers as CLUSTER LINKS shows them, and a link whose buffer passed
/// `cluster-link-sendbuf-limit` closed (Redis's `clusterNodeCronFreeLinkOnBufferLimitReached`;
/// the next tick dials the node again).
fn check_send_buffers(engine: &mut crate::engine::Engine, links: &Links) {
    let limit = engine.server.config.cluster.link_sendbuf_limit as usize;
    let mut over = Vec::new();
    for (&link, io) in links.borrow().iter() {
        let queued = io.queued.get();
        if let Some(state) = engine.server.cluster.bus.links.get_mut(&link) {
            state.send_buffer = queued;
        }
        if limit > 0 && queued > limit {
            over.push((link, queued));
        }
    }
    for (link, queued) in over {
        if let Some(io) = links.borrow_mut().remove(&link) {
            io.stop.notify_one();
        }
        engine.server.log.warning(&format!(
            "Freeing cluster link ({}, used memory: {queued}) due to exceeding send buffer memory limit.",
            link
        ));
        engine.server.cluster.bus.buffer_limit_exceeded += 1;
        engine.cluster_link_lost(link);
    }
}

/// The link is gone (on this side's initiative or not): the state machine hears of it.
fn lost<S: EngineCell>(shared: &S, links: &Links, link: LinkId) {
    if links.borrow_mut().remove(&link).is_some() {
        shared.engine().cluster_link_lost(link);
    }
}

/// Serves a connected link: frames from `rx` are written, frames read go to the engine; ends
/// when either side fails or the link is closed.
async fn serve_link<S: EngineCell + 'static, T: AsyncRead + AsyncWrite + 'static>(
    stream: T,
    link: LinkId,
    shared: Rc<S>,
    links: Links,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    stop: Rc<Notify>,
) {
    let queued = links.borrow().get(&link).map(|io| io.queued.clone());
    let queued = queued.unwrap_or_default();
    let (mut read, mut write) = tokio::io::split(stream);
    let writer = async {
        while let Some(frame) = rx.recv().await {
            if write.write_all(&frame).await.is_err() {
                return;
            }
            queued.set(queued.get().saturating_sub(frame.len()));
            // TLS keeps what it has not sent until flushed.
            if rx.is_empty() && write.flush().await.is_err() {
                return;
            }
        }
    };
    let reader = read_frames(&mut read, link, &*shared);
    tokio::select! {
        _ = writer => {}
        _ = reader => {}
        _ = stop.notified() => {}
    }
    lost(&*shared, &links, link);
}

/// Reads frames and hands each valid message to the engine, until the stream ends, a frame is
/// malformed, or the state machine drops the link.
async fn read_frames<S: EngineCell, R: AsyncRead + Unpin>(read: &mut R, link: LinkId, shared: &S) {
    let mut frame = Vec::new();
    loop {
        let mut prefix = [0u8; 8];
        if read.read_exact(&mut prefix).await.is_err() {
            return;
        }
        let Ok(len) = embedis_bus::frame_len(&prefix) else {
            return;
        };
        frame.clear();
        frame.extend_from_slice(&prefix);
        frame.resize(len, 0);
        if read.read_exact(&mut frame[8..]).await.is_err() {
            return;
        }
        let Ok(message) = embedis_bus::decode(&frame) else {
            // Redis ignores a message whose lengths do not add up, and keeps the link.
            continue;
        };
        let mut engine = shared.engine();
        let kept = engine.cluster_receive(link, message);
        shared.after_work(&mut engine);
        if !kept {
            return;
        }
    }
}
