//! The reading end of a diskless full sync's child (Redis's `rdbPipeReadHandler`): the image
//! comes back out of the child's pipe (see [`crate::services::rdb_transfer`]) and each piece
//! goes to every replica still receiving it. The next piece is read only once no replica's
//! connection still holds a congesting amount of image unwritten, so the slowest replica sets
//! the pace and no output buffer grows with the image. Runs for the server's lifetime on the
//! executor's event loop, woken when a transfer starts.

use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe::Receiver;

use crate::engine::Engine;
use crate::io::primary_link::EngineCell;
use crate::services::rdb_transfer::{self, Flow};

/// Bytes read from the pipe at a time (the child writes 16 KB pieces; a full pipe holds 64 KB).
const READ_SIZE: usize = 64 * 1024;

/// How long a congested transfer waits before looking at its replicas' connections again.
const CONGESTED_WAIT: Duration = Duration::from_millis(1);

/// Runs for the server's lifetime: reads each transfer's pipe as it starts.
pub async fn run<S: EngineCell>(shared: Rc<S>) {
    let wake = shared.engine_ref().server.repl.transfer_wake.clone();
    loop {
        let claimed = claim(&mut shared.engine());
        match claimed {
            Some((pid, receiver)) => read_pipe(&shared, pid, receiver).await,
            None => wake.notified().await,
        }
    }
}

/// Takes a new transfer's pipe, as an asynchronous reader; a pipe that cannot be watched
/// fails its transfer.
fn claim(engine: &mut Engine) -> Option<(u32, Receiver)> {
    let transfer = engine.server.repl.transfer.as_mut()?;
    let output = transfer.output.take()?;
    let pid = transfer.pid();
    match Receiver::from_owned_fd(OwnedFd::from(output)) {
        Ok(receiver) => Some((pid, receiver)),
        Err(e) => {
            let Engine {
                server, clients, ..
            } = engine;
            rdb_transfer::read_failed(server, clients, pid, &e.to_string());
            None
        }
    }
}

/// Reads the pipe of the transfer `pid` to its end (or until the transfer is over).
async fn read_pipe<S: EngineCell>(shared: &Rc<S>, pid: u32, mut receiver: Receiver) {
    let mut buf = vec![0u8; READ_SIZE];
    loop {
        if !wait_for_room(shared, pid).await {
            return;
        }
        let read = receiver.read(&mut buf).await;
        let mut engine = shared.engine();
        let Engine {
            server, clients, ..
        } = &mut *engine;
        let flow = match read {
            Ok(0) => {
                rdb_transfer::done_reading(server, pid);
                // The child ends with its input, most often by now: its replicas need not wait
                // for the tick to go online.
                std::thread::yield_now();
                let dropped = rdb_transfer::collect(server, clients);
                for id in dropped {
                    if let Some(client) = engine.clients.get(id) {
                        client.handle.kill();
                    }
                    engine.disconnect(id);
                }
                Flow::Stop
            }
            Ok(n) => rdb_transfer::deliver(server, clients, pid, &buf[..n]),
            Err(e) => {
                rdb_transfer::read_failed(server, clients, pid, &e.to_string());
                Flow::Stop
            }
        };
        shared.after_work(&mut engine);
        if flow == Flow::Stop {
            return;
        }
    }
}

/// Waits until no target is congested; false if the transfer is over meanwhile.
async fn wait_for_room<S: EngineCell>(shared: &Rc<S>, pid: u32) -> bool {
    loop {
        let flow = {
            let mut engine = shared.engine();
            let now_ms = engine.server.clock.now_ms();
            let Engine {
                server, clients, ..
            } = &mut *engine;
            rdb_transfer::ready(server, clients, pid, now_ms)
        };
        match flow {
            Flow::Read => return true,
            Flow::Stop => return false,
            Flow::Wait => tokio::time::sleep(CONGESTED_WAIT).await,
        }
    }
}
