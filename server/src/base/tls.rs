//! TLS: the `tls-*` parameters, the contexts built from them, and the one place the rest of the
//! server asks for an acceptor (the TLS port, the cluster bus) or a connector (a replica's link
//! to its primary, the bus's links to other nodes).
//!
//! Redis 7.0 builds an OpenSSL context from the certificate, key and CA files when TLS is wanted
//! (a `tls-port`, `tls-replication` or `tls-cluster`), and builds it again when CONFIG SET changes
//! one of them, keeping the old one if the new files do not load. Here the same happens with the
//! same library (the `openssl` crate over the system's libssl, through `tokio-openssl`):
//! [`configure`] makes the calls Redis makes, in its order, into a [`TlsContext`] (or says, in
//! the words Redis logs, why it cannot), and [`TlsShared`] holds the current one where the
//! listeners and the link read it for every new connection — so a reload changes new
//! connections and leaves open ones alone, as in Redis. `tls-auth-clients` is read per
//! connection too (Redis sets the verify mode on each accepted connection).
//!
//! OpenSSL rather than rustls because every recipe Redis serves must serve here: X.509 v1
//! certificates (webpki takes v3 only), encrypted keys with `tls-key-file-pass`, finite-field
//! DHE suites and `tls-dh-params-file`, TLS 1.2 CBC suites (`tls-ciphers AES128-SHA256`, as
//! Redis's own tests ask), TLS 1.0/1.1 in `tls-protocols`, and OpenSSL's cipher-list language
//! itself, which only OpenSSL reads as OpenSSL does. BENCHMARKS.md ("TLS") has what it costs.
//!
//! A replica checks its primary's certificate chain against the CA but not the host name, as
//! Redis 7.0 does (it never sets the expected host on its OpenSSL connection): certificates
//! made for a cluster's nodes often name no address at all.

use openssl::error::ErrorStack;
use openssl::pkey::PKey;
use openssl::ssl::{
    Ssl, SslContext, SslContextBuilder, SslMethod, SslMode, SslOptions, SslSessionCacheMode,
    SslVerifyMode,
};
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use tokio::net::TcpStream;

/// `tls-auth-clients`: whether a client must show a certificate signed by the CA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthClients {
    No,
    #[default]
    Yes,
    /// A client may show none, but one it shows must verify.
    Optional,
}

impl AuthClients {
    pub const NAMES: &'static [&'static str] = &["no", "yes", "optional"];

    pub fn name(self) -> &'static str {
        match self {
            AuthClients::No => "no",
            AuthClients::Yes => "yes",
            AuthClients::Optional => "optional",
        }
    }

    pub fn parse(v: &str) -> AuthClients {
        match v.to_ascii_lowercase().as_str() {
            "no" => AuthClients::No,
            "optional" => AuthClients::Optional,
            _ => AuthClients::Yes,
        }
    }
}

/// The `tls-*` parameters, with Redis 7.0's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// `tls-port`: the TLS listener's port (0: none).
    pub port: u16,
    pub cert_file: String,
    pub key_file: String,
    pub key_file_pass: String,
    pub client_cert_file: String,
    pub client_key_file: String,
    pub client_key_file_pass: String,
    pub dh_params_file: String,
    pub ca_cert_file: String,
    pub ca_cert_dir: String,
    pub auth_clients: AuthClients,
    pub protocols: String,
    pub ciphers: String,
    pub ciphersuites: String,
    pub prefer_server_ciphers: bool,
    pub session_caching: bool,
    pub session_cache_size: u64,
    pub session_cache_timeout: u64,
    /// `tls-replication`: a replica links to its primary over TLS.
    pub replication: bool,
    /// `tls-cluster`: the cluster bus speaks TLS, and nodes announce their TLS port to clients.
    pub cluster: bool,
    /// `cluster-announce-tls-port`: the TLS port announced under `tls-cluster` (0: `tls-port`).
    pub cluster_announce_tls_port: u16,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            port: 0,
            cert_file: String::new(),
            key_file: String::new(),
            key_file_pass: String::new(),
            client_cert_file: String::new(),
            client_key_file: String::new(),
            client_key_file_pass: String::new(),
            dh_params_file: String::new(),
            ca_cert_file: String::new(),
            ca_cert_dir: String::new(),
            auth_clients: AuthClients::Yes,
            protocols: String::new(),
            ciphers: String::new(),
            ciphersuites: String::new(),
            prefer_server_ciphers: false,
            session_caching: true,
            session_cache_size: 20 * 1024,
            session_cache_timeout: 300,
            replication: false,
            cluster: false,
            cluster_announce_tls_port: 0,
        }
    }
}

impl TlsConfig {
    /// Whether anything uses TLS, so that a context must exist (Redis's test before it
    /// configures OpenSSL).
    pub fn wanted(&self) -> bool {
        self.port != 0 || self.replication || self.cluster
    }

    /// Whether `other` differs in what a context is built from (everything but the port, the
    /// client-auth mode, which is read per connection, and the cluster's announced port).
    pub fn context_differs(&self, other: &TlsConfig) -> bool {
        let strip = |c: &TlsConfig| TlsConfig {
            port: 0,
            auth_clients: AuthClients::Yes,
            cluster_announce_tls_port: 0,
            ..c.clone()
        };
        strip(self) != strip(other)
    }
}

/// What one configuration built: the context connections are accepted with, and the one a
/// replica or a bus link connects with.
pub struct TlsContext {
    server: SslContext,
    /// None without a CA: a replica cannot check its primary.
    client: Option<SslContext>,
    /// Whether a CA was given, without which no client certificate can be verified.
    has_ca: bool,
}

impl std::fmt::Debug for TlsContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsContext")
            .field("verifies_clients", &self.has_ca)
            .field("connects", &self.client.is_some())
            .finish()
    }
}

/// A TLS connection, accepted or dialled.
pub type TlsStream = tokio_openssl::SslStream<TcpStream>;

/// The context and verify mode for one connection being accepted.
pub struct Acceptor {
    context: SslContext,
    verify: SslVerifyMode,
}

impl Acceptor {
    /// Runs the server side of the handshake on `stream`.
    pub async fn accept(self, stream: TcpStream) -> Result<TlsStream, String> {
        let mut ssl = Ssl::new(&self.context).map_err(|e| openssl_error(&e))?;
        ssl.set_verify(self.verify);
        let mut tls = TlsStream::new(ssl, stream).map_err(|e| openssl_error(&e))?;
        Pin::new(&mut tls)
            .accept()
            .await
            .map_err(|e| handshake_error(&e))?;
        Ok(tls)
    }
}

/// The context a replica's link or a bus link connects with.
pub struct Connector {
    context: SslContext,
}

impl Connector {
    /// Runs the client side of the handshake on `stream`.
    pub async fn connect(self, stream: TcpStream) -> Result<TlsStream, String> {
        let ssl = Ssl::new(&self.context).map_err(|e| openssl_error(&e))?;
        let mut tls = TlsStream::new(ssl, stream).map_err(|e| openssl_error(&e))?;
        Pin::new(&mut tls)
            .connect()
            .await
            .map_err(|e| handshake_error(&e))?;
        Ok(tls)
    }
}

/// The current context and client-auth mode, shared by the listeners, the replica link and
/// CONFIG SET. Cloning shares them.
#[derive(Clone, Default)]
pub struct TlsShared {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    context: parking_lot::RwLock<Option<Arc<TlsContext>>>,
    auth: AtomicU8,
}

impl TlsShared {
    /// Makes `context` the one new connections use.
    pub fn install(&self, context: TlsContext) {
        *self.inner.context.write() = Some(Arc::new(context));
    }

    /// Whether a context was ever built (Redis's `isTlsConfigured`).
    pub fn configured(&self) -> bool {
        self.inner.context.read().is_some()
    }

    pub fn set_auth_clients(&self, mode: AuthClients) {
        self.inner.auth.store(mode as u8, Ordering::Release);
    }

    fn auth_clients(&self) -> AuthClients {
        match self.inner.auth.load(Ordering::Acquire) {
            x if x == AuthClients::No as u8 => AuthClients::No,
            x if x == AuthClients::Optional as u8 => AuthClients::Optional,
            _ => AuthClients::Yes,
        }
    }

    /// The acceptor for a connection just accepted on the TLS port, with the current context and
    /// client-auth mode; None if it must be refused (no context, or verification asked without
    /// a CA).
    pub fn acceptor(&self) -> Option<Acceptor> {
        let context = self.inner.context.read().clone()?;
        let verify = match self.auth_clients() {
            AuthClients::No => SslVerifyMode::NONE,
            AuthClients::Yes => SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT,
            AuthClients::Optional => SslVerifyMode::PEER,
        };
        if verify != SslVerifyMode::NONE && !context.has_ca {
            return None;
        }
        Some(Acceptor {
            context: context.server.clone(),
            verify,
        })
    }

    /// The acceptor of the cluster bus under `tls-cluster`: a peer must show a certificate
    /// signed by the CA whatever `tls-auth-clients` says, as in Redis. None without a CA.
    pub fn peer_acceptor(&self) -> Option<Acceptor> {
        let context = self.inner.context.read().clone()?;
        context.has_ca.then(|| Acceptor {
            context: context.server.clone(),
            verify: SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT,
        })
    }

    /// The connector a replica's link uses; None without a context or a CA.
    pub fn connector(&self) -> Option<Connector> {
        let context = self.inner.context.read().clone()?;
        Some(Connector {
            context: context.client.clone()?,
        })
    }
}

/// An OpenSSL error as Redis logs it (`ERR_error_string` of the first error queued:
/// `error:0A00010B:SSL routines::wrong version number`).
fn openssl_error(stack: &ErrorStack) -> String {
    match stack.errors().first() {
        None => "unknown error".into(),
        Some(e) => format!(
            "error:{:08X}:{}::{}",
            e.code(),
            e.library().unwrap_or(""),
            e.reason().unwrap_or("")
        ),
    }
}

/// A failed handshake as Redis logs it: OpenSSL's error if it queued one, else the system's.
fn handshake_error(e: &openssl::ssl::Error) -> String {
    if let Some(stack) = e.ssl_error() {
        return openssl_error(stack);
    }
    match e.io_error() {
        Some(io) => io_text(io),
        // The peer closed mid-handshake. OpenSSL queues its own error for that on a socket BIO,
        // which Redis logs; on tokio-openssl's BIO it is a bare SYSCALL, so its text is given.
        None => "error:0A000126:SSL routines::unexpected eof while reading".into(),
    }
}

// libssl functions the openssl crate does not wrap. `SSL_CTX_set_timeout` sets how long a cached
// session lives (`tls-session-cache-timeout`).
extern "C" {
    fn SSL_CTX_set_timeout(ctx: *mut openssl_sys::SSL_CTX, seconds: libc::c_long) -> libc::c_long;
}

/// Builds a context from `config`, or returns what Redis would log when it cannot; the checks
/// come in Redis's order, so that the first problem is the one reported.
pub fn configure(config: &TlsConfig) -> Result<TlsContext, String> {
    if config.cert_file.is_empty() {
        return Err("No tls-cert-file configured!".into());
    }
    if config.key_file.is_empty() {
        return Err("No tls-key-file configured!".into());
    }
    let needs_ca = config.auth_clients != AuthClients::No || config.cluster || config.replication;
    let has_ca = !config.ca_cert_file.is_empty() || !config.ca_cert_dir.is_empty();
    if needs_ca && !has_ca {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    let refused = protocols_refused(&config.protocols)?;
    let mut server = context_builder(
        config,
        refused,
        &config.cert_file,
        &config.key_file,
        &config.key_file_pass,
        false,
    )?;
    session_cache(&mut server, config);
    dh_params(&mut server, &config.dh_params_file)?;
    let client = if !has_ca {
        None
    } else if !config.client_cert_file.is_empty() && !config.client_key_file.is_empty() {
        // Redis's client context has its own certificate when both client files are set…
        let files = (&config.client_cert_file, &config.client_key_file);
        let pass = &config.client_key_file_pass;
        Some(context_builder(config, refused, files.0, files.1, pass, true)?.build())
    } else {
        // … and uses the server's otherwise.
        let (cert, key) = (&config.cert_file, &config.key_file);
        Some(context_builder(config, refused, cert, key, &config.key_file_pass, true)?.build())
    };
    Ok(TlsContext {
        server: server.build(),
        client,
        has_ca,
    })
}

/// `tls-protocols`: space-separated names, case-insensitive; the versions it does not name are
/// refused. Empty is TLS 1.2 and 1.3, Redis's default.
fn protocols_refused(text: &str) -> Result<SslOptions, String> {
    let all = SslOptions::NO_TLSV1
        | SslOptions::NO_TLSV1_1
        | SslOptions::NO_TLSV1_2
        | SslOptions::NO_TLSV1_3;
    if text.trim().is_empty() {
        return Ok(SslOptions::NO_TLSV1 | SslOptions::NO_TLSV1_1);
    }
    let mut refused = all;
    for word in text.split_ascii_whitespace() {
        refused.remove(match word.to_ascii_lowercase().as_str() {
            "tlsv1" => SslOptions::NO_TLSV1,
            "tlsv1.1" => SslOptions::NO_TLSV1_1,
            "tlsv1.2" => SslOptions::NO_TLSV1_2,
            "tlsv1.3" => SslOptions::NO_TLSV1_3,
            _ => return Err("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.".into()),
        });
    }
    Ok(refused)
}

/// One context as Redis's `createSSLContext` makes it: options, certificate chain, key, CA,
/// ciphers, each failure reported with the file and OpenSSL's error.
fn context_builder(
    config: &TlsConfig,
    refused: SslOptions,
    cert_file: &str,
    key_file: &str,
    key_pass: &str,
    client: bool,
) -> Result<SslContextBuilder, String> {
    let method = if client {
        SslMethod::tls_client()
    } else {
        SslMethod::tls_server()
    };
    let mut ctx = SslContext::builder(method).map_err(|e| openssl_error(&e))?;
    let mut options = refused | SslOptions::NO_SSLV2 | SslOptions::NO_SSLV3;
    options |= SslOptions::NO_COMPRESSION;
    if config.prefer_server_ciphers {
        options |= SslOptions::CIPHER_SERVER_PREFERENCE;
    }
    ctx.set_options(options);
    ctx.set_mode(SslMode::ENABLE_PARTIAL_WRITE | SslMode::ACCEPT_MOVING_WRITE_BUFFER);
    // Connections set their own mode when accepted; a dialling side checks its peer.
    ctx.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT);
    ctx.set_certificate_chain_file(cert_file).map_err(|e| {
        format!(
            "Failed to load certificate: {cert_file}: {}",
            openssl_error(&e)
        )
    })?;
    let key = load_key(key_file, key_pass)
        .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))?;
    ctx.set_private_key(&key).map_err(|e| {
        format!(
            "Failed to load private key: {key_file}: {}",
            openssl_error(&e)
        )
    })?;
    if !config.ca_cert_file.is_empty() || !config.ca_cert_dir.is_empty() {
        let file =
            (!config.ca_cert_file.is_empty()).then(|| std::path::Path::new(&config.ca_cert_file));
        let dir =
            (!config.ca_cert_dir.is_empty()).then(|| std::path::Path::new(&config.ca_cert_dir));
        ctx.load_verify_locations(file, dir).map_err(|e| {
            format!(
                "Failed to configure CA certificate(s) file/directory: {}",
                openssl_error(&e)
            )
        })?;
    }
    if !config.ciphers.is_empty() {
        ctx.set_cipher_list(&config.ciphers)
            .map_err(|_| format!("Failed to configure ciphers: {}", config.ciphers))?;
    }
    if !config.ciphersuites.is_empty() {
        ctx.set_ciphersuites(&config.ciphersuites)
            .map_err(|_| format!("Failed to configure ciphersuites: {}", config.ciphersuites))?;
    }
    Ok(ctx)
}

/// A PEM private key, decrypted with `pass` when it is encrypted. Without a password an
/// encrypted key fails (Redis's OpenSSL would ask a terminal, which a server has not).
fn load_key(key_file: &str, pass: &str) -> Result<PKey<openssl::pkey::Private>, String> {
    let pem = std::fs::read(key_file).map_err(|e| system_error(&e))?;
    PKey::private_key_from_pem_callback(&pem, |buf| {
        let pass = pass.as_bytes();
        if pass.is_empty() || pass.len() > buf.len() {
            return Ok(0);
        }
        buf[..pass.len()].copy_from_slice(pass);
        Ok(pass.len())
    })
    .map_err(|e| openssl_error(&e))
}

/// `tls-session-caching`, `-size` and `-timeout` on the server's context, as Redis sets them.
fn session_cache(ctx: &mut SslContextBuilder, config: &TlsConfig) {
    if !config.session_caching {
        ctx.set_session_cache_mode(SslSessionCacheMode::OFF);
        return;
    }
    ctx.set_session_cache_mode(SslSessionCacheMode::SERVER);
    ctx.set_session_cache_size(config.session_cache_size.min(i32::MAX as u64) as i32);
    // A session resumed on a connection that verifies clients needs a context id to match.
    let _ = ctx.set_session_id_context(b"embedis");
    let timeout = config.session_cache_timeout.min(libc::c_long::MAX as u64) as libc::c_long;
    // SAFETY: the builder owns a valid SSL_CTX for the length of the call.
    unsafe { SSL_CTX_set_timeout(ctx.as_ptr(), timeout) };
}

/// `tls-dh-params-file`: finite-field Diffie-Hellman parameters for the DHE suites. Without one,
/// OpenSSL picks parameters matching the certificate's strength, as Redis lets it.
fn dh_params(ctx: &mut SslContextBuilder, file: &str) -> Result<(), String> {
    if file.is_empty() {
        // SAFETY: the builder owns a valid SSL_CTX for the length of the call.
        unsafe { openssl_sys::SSL_CTX_set_dh_auto(ctx.as_ptr(), 1) };
        return Ok(());
    }
    let pem = std::fs::read(file).map_err(|e| format!("Failed to load {file}: {}", io_text(&e)))?;
    let dh = openssl::dh::Dh::params_from_pem(&pem)
        .map_err(|_| format!("{file}: failed to read DH params."))?;
    ctx.set_tmp_dh(&dh).map_err(|e| {
        format!(
            "Failed to load DH params file: {file}: {}",
            openssl_error(&e)
        )
    })
}

/// A file that cannot be read, as OpenSSL reports it when it opens the file itself (a system
/// error: its flag bit and errno, then `strerror`), so that the key file's line reads as Redis's.
fn system_error(e: &std::io::Error) -> String {
    let errno = e.raw_os_error().unwrap_or(0) as u32;
    format!(
        "error:{:08X}:system library::{}",
        0x8000_0000 | errno,
        io_text(e)
    )
}

/// An I/O error as C's `strerror` says it (Rust adds " (os error N)").
fn io_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_files_say_what_redis_logs() {
        let mut config = TlsConfig::default();
        assert_eq!(
            configure(&config).unwrap_err(),
            "No tls-cert-file configured!"
        );
        config.cert_file = "/nonexistent/cert.pem".into();
        assert_eq!(
            configure(&config).unwrap_err(),
            "No tls-key-file configured!"
        );
        config.key_file = "/nonexistent/key.pem".into();
        assert!(configure(&config)
            .unwrap_err()
            .starts_with("Either tls-ca-cert-file or tls-ca-cert-dir"));
        config.auth_clients = AuthClients::No;
        assert!(configure(&config)
            .unwrap_err()
            .starts_with("Failed to load certificate: /nonexistent/cert.pem: error:"));
    }

    #[test]
    fn protocols_are_parsed_as_redis_names_them() {
        let refused = |t| protocols_refused(t).unwrap();
        assert_eq!(refused(""), SslOptions::NO_TLSV1 | SslOptions::NO_TLSV1_1);
        assert_eq!(
            refused("tlsv1.2 TLSv1.3"),
            SslOptions::NO_TLSV1 | SslOptions::NO_TLSV1_1
        );
        assert_eq!(
            refused("TLSv1 TLSv1.1"),
            SslOptions::NO_TLSV1_2 | SslOptions::NO_TLSV1_3
        );
        assert!(protocols_refused("SSLv3")
            .unwrap_err()
            .starts_with("Invalid tls-protocols"));
    }

    #[test]
    fn openssl_errors_read_as_redis_logs_them() {
        let err = openssl::ssl::SslContext::builder(SslMethod::tls())
            .unwrap()
            .set_cipher_list("nonsense")
            .unwrap_err();
        assert_eq!(
            openssl_error(&err),
            "error:0A0000B9:SSL routines::no cipher match"
        );
        let missing = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(io_text(&missing), "No such file or directory");
        assert_eq!(
            load_key("/nonexistent/key.pem", "").unwrap_err(),
            "error:80000002:system library::No such file or directory"
        );
    }

    #[test]
    fn the_context_ignores_the_port_and_auth_mode() {
        let a = TlsConfig::default();
        let b = TlsConfig {
            port: 6380,
            auth_clients: AuthClients::Optional,
            ..a.clone()
        };
        assert!(!a.context_differs(&b));
        let c = TlsConfig {
            cert_file: "x".into(),
            ..a.clone()
        };
        assert!(a.context_differs(&c));
    }
}
