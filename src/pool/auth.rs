//! The server's own answer to a login the driver cannot finish.
//!
//! MySQL answers a login as an account that does not exist with a decoy: it asks the client to
//! switch to an authentication plugin chosen at random (and then kept for that name), among
//! them `sha256_password`, so that the answer does not tell which accounts exist. The driver
//! has no `sha256_password` and gives up before the server says "access denied" — a mistyped
//! user would read as a driver or connection fault. When that happens, `verdict` logs in once
//! more on a connection of its own, does the `sha256_password` exchange itself (the password
//! RSA-encrypted with the server's public key, as the plugin wants it without TLS) and returns
//! what the server answers: `ER_ACCESS_DENIED_ERROR` (1045) for an
//! account that does not exist or a wrong password; for a real `sha256_password` account that
//! accepts the password, the plugin is named as unsupported.
//!
//! Only without TLS: a pool that requires TLS gets the unsupported-plugin error instead, which
//! says that MySQL also asks for the plugin when the account does not exist (this exchange
//! runs no TLS, and the login's user name would travel in clear).

use crate::error::connect::{self, Place};
use crate::error::{Error, Result};
use mysql_common::constants::CapabilityFlags;
use mysql_common::io::ParseBuf;
use mysql_common::packets::{
    AuthPlugin, AuthSwitchRequest, ErrPacket, HandshakePacket, HandshakeResponse,
};
use mysql_common::proto::MySerialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The plugin MySQL's decoy may ask for that the driver lacks.
pub const DECOY_PLUGIN: &str = "sha256_password";

/// What the server answers a `sha256_password` login as `user` / `password` at `place`, or
/// `None` when that cannot be learnt (the caller keeps its own error then).
pub async fn verdict(place: &Place, user: &str, password: Option<&str>) -> Option<Error> {
    match place {
        Place::Tcp { host, port } => {
            let stream = tokio::net::TcpStream::connect((host.as_str(), *port))
                .await
                .ok()?;
            login(stream, place, user, password).await.ok()?
        }
        #[cfg(unix)]
        Place::Socket(path) => {
            let stream = tokio::net::UnixStream::connect(path).await.ok()?;
            login(stream, place, user, password).await.ok()?
        }
        #[cfg(not(unix))]
        Place::Socket(_) => None,
    }
}

/// One login over `stream` (see the module comment).
async fn login<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    place: &Place,
    user: &str,
    password: Option<&str>,
) -> Result<Option<Error>> {
    let mut seq = 0u8;
    let greeting = read(&mut stream, &mut seq).await?;
    if greeting.first() == Some(&0xff) {
        return Ok(Some(server_error(&greeting, CapabilityFlags::empty())?));
    }
    let hello = ParseBuf(&greeting)
        .parse::<HandshakePacket>(())
        .map_err(|e| lost(place, e))?;
    let caps = hello.capabilities()
        & (CapabilityFlags::CLIENT_PROTOCOL_41
            | CapabilityFlags::CLIENT_SECURE_CONNECTION
            | CapabilityFlags::CLIENT_LONG_PASSWORD
            | CapabilityFlags::CLIENT_TRANSACTIONS
            | CapabilityFlags::CLIENT_PLUGIN_AUTH);
    let plugin = hello
        .auth_plugin()
        .unwrap_or(AuthPlugin::CachingSha2Password)
        .into_owned();
    let nonce = hello.nonce();
    let scramble = plugin.gen_data(password, &nonce);
    let response = HandshakeResponse::new(
        scramble.as_deref(),
        hello.server_version_parsed().unwrap_or((0, 0, 0)),
        Some(user.as_bytes()),
        None::<&[u8]>,
        Some(plugin),
        caps,
        None,
        1 << 24,
    );
    let mut body = Vec::new();
    response.serialize(&mut body);
    write(&mut stream, &mut seq, &body).await?;

    let answer = read(&mut stream, &mut seq).await?;
    match answer.first() {
        Some(0xff) => return Ok(Some(server_error(&answer, caps)?)),
        Some(0xfe) => {}
        // Logged in, or an exchange of another plugin: nothing to learn here.
        _ => return Ok(None),
    }
    let switch = ParseBuf(&answer)
        .parse::<AuthSwitchRequest>(())
        .map_err(|e| lost(place, e))?;
    if !matches!(switch.auth_plugin(), AuthPlugin::Other(name) if name.as_ref() == DECOY_PLUGIN.as_bytes())
    {
        return Ok(None);
    }
    let nonce = switch.plugin_data().to_vec();
    let mut clear = password.unwrap_or("").as_bytes().to_vec();
    clear.push(0);
    if clear.len() == 1 {
        // No password: the plugin's empty answer.
        write(&mut stream, &mut seq, &clear).await?;
    } else {
        // Ask for the server's public key, then send the password XOR the nonce under it.
        write(&mut stream, &mut seq, &[0x01]).await?;
        let key = read(&mut stream, &mut seq).await?;
        if key.first() == Some(&0xff) {
            return Ok(Some(server_error(&key, caps)?));
        }
        let pem = key.get(1..).unwrap_or_default().to_vec();
        for (i, b) in clear.iter_mut().enumerate() {
            *b ^= nonce.get(i % nonce.len().max(1)).copied().unwrap_or(0);
        }
        // The key comes from the server; the encoder panics on one it cannot read.
        let sealed = std::panic::catch_unwind(|| mysql_common::crypto::encrypt(&clear, &pem))
            .map_err(|_| lost(place, "the server's public key could not be read"))?;
        write(&mut stream, &mut seq, &sealed).await?;
    }
    let last = read(&mut stream, &mut seq).await?;
    Ok(Some(match last.first() {
        Some(0xff) => server_error(&last, caps)?,
        _ => Error::Connect(Box::new(connect::unsupported_plugin(DECOY_PLUGIN, place))),
    }))
}

/// The server error an ERR packet holds.
fn server_error(packet: &[u8], caps: CapabilityFlags) -> Result<Error> {
    let err = ParseBuf(packet)
        .parse::<ErrPacket>(caps | CapabilityFlags::CLIENT_PROTOCOL_41)
        .map_err(|e| Error::connection(e.to_string()))?;
    match err {
        ErrPacket::Error(e) => Ok(Error::Server {
            code: e.error_code(),
            state: e
                .sql_state_ref()
                .map_or_else(|| "HY000".into(), |s| s.as_str().into_owned()),
            message: e.message_str().into_owned(),
        }),
        ErrPacket::Progress(_) => Err(Error::connection("unexpected progress report")),
    }
}

fn lost(place: &Place, e: impl std::fmt::Display) -> Error {
    Error::connection(format!("the login at {place} could not be read: {e}"))
}

/// Reads one packet (of at most 16 MiB: the handshake's are tiny), keeping the sequence number.
async fn read<S: AsyncRead + Unpin>(stream: &mut S, seq: &mut u8) -> Result<Vec<u8>> {
    let mut head = [0u8; 4];
    stream
        .read_exact(&mut head)
        .await
        .map_err(|e| Error::connection(connect::describe(&e)))?;
    let len = usize::from(head[0]) | usize::from(head[1]) << 8 | usize::from(head[2]) << 16;
    *seq = head[3].wrapping_add(1);
    let mut body = vec![0u8; len];
    stream
        .read_exact(&mut body)
        .await
        .map_err(|e| Error::connection(connect::describe(&e)))?;
    Ok(body)
}

/// Writes one packet with the next sequence number.
async fn write<S: AsyncWrite + Unpin>(stream: &mut S, seq: &mut u8, body: &[u8]) -> Result<()> {
    let len = body.len();
    let mut packet = Vec::with_capacity(4 + len);
    packet.extend_from_slice(&[len as u8, (len >> 8) as u8, (len >> 16) as u8, *seq]);
    packet.extend_from_slice(body);
    *seq = seq.wrapping_add(1);
    stream
        .write_all(&packet)
        .await
        .map_err(|e| Error::connection(connect::describe(&e)))
}
