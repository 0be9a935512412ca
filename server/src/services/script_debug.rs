//! The server's side of a script debugging session (SCRIPT DEBUG SYNC, Redis's synchronous
//! LDB; the debugger itself is `embedis_scripting::debugger`): the blocking conversation with
//! the debugging client over its socket, while the session holds the executor — nothing else
//! runs meanwhile, as Redis's synchronous session blocks Redis.
//!
//! Only a connection whose socket the executor's thread may use directly can be debugged: a
//! plain TCP or unix socket in the single-threaded I/O mode (`ClientHandle::is_debuggable`).
//! Its connection task is parked waiting for the EVAL's reply, so nothing else reads or writes
//! the socket during the session.

/// How long a write to the debugging client may wait (Redis's `connSendTimeout(5000)`).
const SEND_TIMEOUT_MS: i32 = 5000;

/// Writes all of `bytes` to `fd`, waiting for room; gives up after the send timeout or on an
/// error (the client then finds the session's end when it reads).
pub fn write_all(fd: i32, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        if !wait_for(fd, libc::POLLOUT, SEND_TIMEOUT_MS) {
            return;
        }
        // SAFETY: `bytes` is a valid buffer; MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE.
        let n = unsafe {
            libc::send(
                fd,
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            let again = std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock;
            if again {
                continue;
            }
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

/// Waits for the client's next bytes and appends them to `buf`; false once it is gone.
pub fn read_some(fd: i32, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if !wait_for(fd, libc::POLLIN, -1) {
            return false;
        }
        // SAFETY: `chunk` is a valid buffer of that length; MSG_DONTWAIT never blocks.
        let n = unsafe {
            libc::recv(
                fd,
                chunk.as_mut_ptr().cast(),
                chunk.len(),
                libc::MSG_DONTWAIT,
            )
        };
        match n {
            0 => return false,
            n if n > 0 => {
                buf.extend_from_slice(&chunk[..n as usize]);
                return true;
            }
            _ => {
                let again =
                    std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock;
                if !again {
                    return false;
                }
            }
        }
    }
}

/// Polls `fd` for `events` up to `timeout_ms` (-1: forever); true if it is ready.
fn wait_for(fd: i32, events: i16, timeout_ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return n > 0 && pfd.revents & (events | libc::POLLHUP | libc::POLLERR) != 0;
    }
}
