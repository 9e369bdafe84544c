//! MCP's stdio transport read and written by the runtime's own event loop.
//!
//! `tokio::io::stdin()`/`stdout()` do every read and write on a blocking thread, which costs
//! thread hand-offs per message: two for the request, two more for the answer. MCP clients
//! start servers with pipes (Python's `subprocess`) or socket pairs (Node's `child_process`),
//! both of which the runtime can poll: such a standard stream is taken over (a duplicate of its
//! descriptor, made non-blocking) and served without any hand-off. Anything else (a terminal,
//! a file) keeps tokio's blocking streams.

use tokio::io::{AsyncRead, AsyncWrite};

/// The stream MCP requests arrive on.
pub type Input = Box<dyn AsyncRead + Send + Unpin>;
/// The stream MCP answers go out on.
pub type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// Standard input and output as MCP's transport: polled directly when they are pipes or
/// sockets, through tokio's blocking streams otherwise. Must run inside the runtime.
pub fn streams() -> (Input, Output) {
    #[cfg(unix)]
    {
        (
            polled::input().unwrap_or_else(|| Box::new(tokio::io::stdin())),
            polled::output().unwrap_or_else(|| Box::new(tokio::io::stdout())),
        )
    }
    #[cfg(not(unix))]
    {
        (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
    }
}

#[cfg(unix)]
mod polled {
    use super::{Input, Output};
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt;
    use tokio::net::unix::pipe;

    /// What kind of stream a standard descriptor is.
    enum Kind {
        Pipe,
        Socket,
        Other,
    }

    /// A duplicate of `fd` and what it is; `None` when it cannot be duplicated.
    fn duplicate(fd: BorrowedFd<'_>) -> Option<(OwnedFd, Kind)> {
        let owned = fd.try_clone_to_owned().ok()?;
        let file = std::fs::File::from(owned);
        let kind = match file.metadata().map(|m| m.file_type()) {
            Ok(t) if t.is_fifo() => Kind::Pipe,
            Ok(t) if t.is_socket() => Kind::Socket,
            _ => Kind::Other,
        };
        Some((file.into(), kind))
    }

    /// A socket descriptor as a non-blocking tokio stream.
    fn socket(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
        let stream = std::os::unix::net::UnixStream::from(fd);
        stream.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(stream).ok()
    }

    pub(super) fn input() -> Option<Input> {
        let stdin = std::io::stdin();
        match duplicate(stdin.as_fd())? {
            (fd, Kind::Pipe) => Some(Box::new(pipe::Receiver::from_owned_fd(fd).ok()?)),
            (fd, Kind::Socket) => Some(Box::new(socket(fd)?)),
            (_, Kind::Other) => None,
        }
    }

    pub(super) fn output() -> Option<Output> {
        let stdout = std::io::stdout();
        match duplicate(stdout.as_fd())? {
            (fd, Kind::Pipe) => Some(Box::new(pipe::Sender::from_owned_fd(fd).ok()?)),
            (fd, Kind::Socket) => Some(Box::new(socket(fd)?)),
            (_, Kind::Other) => None,
        }
    }
}
