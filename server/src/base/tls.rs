//! TLS: the `tls-*` parameters, the contexts built from them, and the one place the rest of the
//! server asks for an acceptor (the TLS port, the cluster bus) or a connector (a replica's link
//! to its primary, the bus's links to other nodes).
//!
//! Redis 7.0 builds an OpenSSL context from the certificate, key and CA files when TLS is wanted
//! (a `tls-port`, `tls-replication` or `tls-cluster`), and builds it again when CONFIG SET changes
//! one of them, keeping the old one if the new files do not load. Here the same happens with
//! rustls: [`configure`] reads the files into a [`TlsContext`] (or says, in the words Redis logs,
//! why it cannot), and [`TlsShared`] holds the current one where the listeners and the link read
//! it for every new connection — so a reload changes new connections and leaves open ones alone,
//! as in Redis. `tls-auth-clients` is read per connection too (Redis sets the verify mode when it
//! accepts), which is why a context carries a server configuration for each of its three values.
//!
//! What rustls cannot do, and so what the accepted parameters do not change:
//! - `tls-dh-params-file`: rustls has no finite-field Diffie-Hellman suites (ECDHE only).
//! - `tls-key-file-pass`, `tls-client-key-file-pass`: rustls reads unencrypted PEM keys only; an
//!   encrypted key fails to load with a log line saying so.
//! - `tls-session-cache-timeout`: rustls's session cache has a size but no lifetime.
//! - `TLSv1` and `TLSv1.1` in `tls-protocols`: rustls speaks TLS 1.2 and 1.3 only (Redis's default
//!   is those two as well); a list naming nothing else fails as an unusable configuration.
//! - X.509 v1 certificates (made by `openssl x509 -req` without extensions): webpki accepts
//!   v3 only; such a certificate fails to load with a log line saying so.
//! - `tls-ciphers` is OpenSSL's cipher-list language: the names of the TLS 1.2 suites rustls has
//!   are honoured, keywords (`DEFAULT`, `HIGH`, `!aNULL`…) keep every TLS 1.2 suite.
//!
//! A replica checks its primary's certificate chain against the CA but not the host name, as
//! Redis 7.0 does (it never sets the expected host on its OpenSSL connection): certificates
//! made for a cluster's nodes often name no address at all.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::{
    CertificateError, CipherSuite, ClientConfig, DigitallySignedStruct, RootCertStore,
    ServerConfig, SignatureScheme, SupportedCipherSuite, SupportedProtocolVersion,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

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

/// What one configuration built: a server configuration per client-auth mode and the client
/// configuration a replica connects with.
pub struct TlsContext {
    /// `tls-auth-clients no`.
    open: Arc<ServerConfig>,
    /// `yes` and `optional`; None without a CA (every such handshake is then refused).
    required: Option<Arc<ServerConfig>>,
    optional: Option<Arc<ServerConfig>>,
    /// None without a CA: a replica cannot check its primary.
    client: Option<Arc<ClientConfig>>,
}

impl std::fmt::Debug for TlsContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsContext")
            .field("verifies_clients", &self.required.is_some())
            .field("connects", &self.client.is_some())
            .finish()
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
    pub fn acceptor(&self) -> Option<tokio_rustls::TlsAcceptor> {
        let context = self.inner.context.read().clone()?;
        let config = match self.auth_clients() {
            AuthClients::No => context.open.clone(),
            AuthClients::Yes => context.required.clone()?,
            AuthClients::Optional => context.optional.clone()?,
        };
        Some(tokio_rustls::TlsAcceptor::from(config))
    }

    /// The acceptor of the cluster bus under `tls-cluster`: a peer must show a certificate
    /// signed by the CA whatever `tls-auth-clients` says, as in Redis. None without a CA.
    pub fn peer_acceptor(&self) -> Option<tokio_rustls::TlsAcceptor> {
        let context = self.inner.context.read().clone()?;
        Some(tokio_rustls::TlsAcceptor::from(context.required.clone()?))
    }

    /// The connector a replica's link uses; None without a context or a CA.
    pub fn connector(&self) -> Option<tokio_rustls::TlsConnector> {
        let context = self.inner.context.read().clone()?;
        Some(tokio_rustls::TlsConnector::from(context.client.clone()?))
    }
}

/// The name a replica connects to: an address as such, anything else as a DNS name (only the
/// SNI extension sees it, since the name is not checked).
pub fn server_name(host: &str) -> ServerName<'static> {
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ServerName::IpAddress(ip.into()),
        Err(_) => ServerName::try_from(host.to_string())
            .unwrap_or_else(|_| ServerName::try_from("localhost").expect("a valid name")),
    }
}

/// Builds a context from `config`, or returns what Redis would log when it cannot.
pub fn configure(config: &TlsConfig) -> Result<TlsContext, String> {
    if config.cert_file.is_empty() {
        return Err("No tls-cert-file configured!".into());
    }
    if config.key_file.is_empty() {
        return Err("No tls-key-file configured!".into());
    }
    let needs_ca = config.auth_clients != AuthClients::No || config.cluster || config.replication;
    if needs_ca && config.ca_cert_file.is_empty() && config.ca_cert_dir.is_empty() {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    let versions = protocol_versions(&config.protocols)?;
    let provider = Arc::new(provider(config)?);
    let roots = load_roots(config)?;
    let (certs, key) = load_pair(&config.cert_file, &config.key_file)?;

    let build_server = |verifier: Option<(Arc<RootCertStore>, bool)>| -> Result<_, String> {
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| format!("Failed to configure TLS protocols: {e}"))?;
        let builder = match verifier {
            None => builder.with_no_client_auth(),
            Some((roots, optional)) => {
                let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider.clone());
                let verifier = if optional {
                    verifier.allow_unauthenticated()
                } else {
                    verifier
                };
                let verifier = verifier.build().map_err(|e| {
                    format!("Failed to configure CA certificate(s) file/directory: {e}")
                })?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut server = builder
            .with_single_cert(certs.clone(), key.clone_key())
            .map_err(|e| {
                // rustls checks the key against the certificate here, and refuses X.509 v1
                // certificates (webpki accepts v3 only).
                format!(
                    "Failed to load certificate: {} with key {}: {e}",
                    config.cert_file, config.key_file
                )
            })?;
        server.ignore_client_order = config.prefer_server_ciphers;
        server.session_storage = if config.session_caching {
            // OpenSSL reads a size of 0 as "no limit"; a bounded cache stands in for it.
            let size = match config.session_cache_size {
                0 => 1 << 20,
                n => n.min(1 << 20) as usize,
            };
            ServerSessionMemoryCache::new(size)
        } else {
            Arc::new(NoServerSessionStorage {})
        };
        Ok(Arc::new(server))
    };

    let open = build_server(None)?;
    let (required, optional) = match &roots {
        Some(roots) => (
            Some(build_server(Some((roots.clone(), false)))?),
            Some(build_server(Some((roots.clone(), true)))?),
        ),
        None => (None, None),
    };
    let client = match &roots {
        None => None,
        Some(roots) => {
            // Redis's client context has its own certificate when both client files are set,
            // and uses the server's otherwise.
            let (client_certs, client_key) =
                if !config.client_cert_file.is_empty() && !config.client_key_file.is_empty() {
                    load_pair(&config.client_cert_file, &config.client_key_file)?
                } else {
                    (certs.clone(), key.clone_key())
                };
            let chain = rustls::client::WebPkiServerVerifier::builder_with_provider(
                roots.clone(),
                provider.clone(),
            )
            .build()
            .map_err(|e| format!("Failed to configure CA certificate(s) file/directory: {e}"))?;
            let client = ClientConfig::builder_with_provider(provider.clone())
                .with_protocol_versions(&versions)
                .map_err(|e| format!("Failed to configure TLS protocols: {e}"))?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ChainOnly(chain)))
                .with_client_auth_cert(client_certs, client_key)
                .map_err(|e| format!("Failed to load private key: {e}"))?;
            Some(Arc::new(client))
        }
    };
    Ok(TlsContext {
        open,
        required,
        optional,
        client,
    })
}

/// `tls-protocols`: space-separated names, case-insensitive; empty is TLS 1.2 and 1.3.
fn protocol_versions(text: &str) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    if text.trim().is_empty() {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    }
    let mut versions = Vec::new();
    for word in text.split_ascii_whitespace() {
        match word.to_ascii_lowercase().as_str() {
            "tlsv1" | "tlsv1.1" => {}
            "tlsv1.2" => versions.push(&rustls::version::TLS12),
            "tlsv1.3" => versions.push(&rustls::version::TLS13),
            _ => {
                return Err("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.".into())
            }
        }
    }
    if versions.is_empty() {
        return Err(format!(
            "tls-protocols '{text}' names no protocol embedis supports (TLSv1.2, TLSv1.3)"
        ));
    }
    Ok(versions)
}

/// OpenSSL's names of the TLS 1.2 suites rustls implements.
const TLS12_NAMES: &[(&str, CipherSuite)] = &[
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// The TLS 1.3 suites by their standard names, which OpenSSL's `tls-ciphersuites` uses.
const TLS13_NAMES: &[(&str, CipherSuite)] = &[
    (
        "TLS_AES_256_GCM_SHA384",
        CipherSuite::TLS13_AES_256_GCM_SHA384,
    ),
    (
        "TLS_AES_128_GCM_SHA256",
        CipherSuite::TLS13_AES_128_GCM_SHA256,
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
];

/// The ring provider with the suites `tls-ciphers` and `tls-ciphersuites` allow.
fn provider(config: &TlsConfig) -> Result<CryptoProvider, String> {
    let base = rustls::crypto::ring::default_provider();
    let is_tls13 = |s: &SupportedCipherSuite| matches!(s, SupportedCipherSuite::Tls13(_));
    let pick = |list: &str, names: &[(&str, CipherSuite)], keywords: bool| -> Option<Vec<_>> {
        let mut wanted = Vec::new();
        let mut everything = false;
        for word in list.split([':', ',', ' ']).filter(|w| !w.is_empty()) {
            if let Some((_, suite)) = names.iter().find(|(n, _)| n.eq_ignore_ascii_case(word)) {
                wanted.push(*suite);
            } else if keywords
                && (word.starts_with(['!', '-', '+', '@'])
                    || word.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'))
            {
                // An OpenSSL keyword or exclusion: the suites rustls has are all modern.
                everything = everything || !word.starts_with(['!', '-', '+', '@']);
            }
        }
        if everything {
            wanted.extend(names.iter().map(|(_, s)| *s));
        }
        (!wanted.is_empty()).then_some(wanted)
    };
    let tls12: Vec<SupportedCipherSuite> = if config.ciphers.is_empty() {
        base.cipher_suites
            .iter()
            .filter(|s| !is_tls13(s))
            .copied()
            .collect()
    } else {
        let wanted = pick(&config.ciphers, TLS12_NAMES, true)
            .ok_or_else(|| format!("Failed to configure ciphers: {}", config.ciphers))?;
        // In the order given (the server's preference under tls-prefer-server-ciphers), once.
        let mut suites: Vec<SupportedCipherSuite> = Vec::new();
        for w in &wanted {
            if let Some(s) = base.cipher_suites.iter().find(|s| s.suite() == *w) {
                if !suites.iter().any(|x| x.suite() == *w) {
                    suites.push(*s);
                }
            }
        }
        suites
    };
    let tls13: Vec<SupportedCipherSuite> = if config.ciphersuites.is_empty() {
        base.cipher_suites
            .iter()
            .filter(|s| is_tls13(s))
            .copied()
            .collect()
    } else {
        let wanted = pick(&config.ciphersuites, TLS13_NAMES, false)
            .ok_or_else(|| format!("Failed to configure ciphersuites: {}", config.ciphersuites))?;
        // In the order given: that is the server's preference.
        wanted
            .iter()
            .filter_map(|w| base.cipher_suites.iter().find(|s| s.suite() == *w).copied())
            .collect()
    };
    Ok(CryptoProvider {
        cipher_suites: tls13.into_iter().chain(tls12).collect(),
        ..base
    })
}

/// The CA certificates of `tls-ca-cert-file` and every certificate file in `tls-ca-cert-dir`;
/// None when neither is set.
fn load_roots(config: &TlsConfig) -> Result<Option<Arc<RootCertStore>>, String> {
    if config.ca_cert_file.is_empty() && config.ca_cert_dir.is_empty() {
        return Ok(None);
    }
    let fail = |why: String| format!("Failed to configure CA certificate(s) file/directory: {why}");
    let mut roots = RootCertStore::empty();
    if !config.ca_cert_file.is_empty() {
        for cert in CertificateDer::pem_file_iter(&config.ca_cert_file)
            .map_err(|e| fail(format!("{}: {e}", config.ca_cert_file)))?
        {
            let cert = cert.map_err(|e| fail(format!("{}: {e}", config.ca_cert_file)))?;
            roots
                .add(cert)
                .map_err(|e| fail(format!("{}: {e}", config.ca_cert_file)))?;
        }
    }
    if !config.ca_cert_dir.is_empty() {
        // OpenSSL looks certificates up there by hashed names; reading every file that holds
        // certificates finds the same ones.
        let entries = std::fs::read_dir(&config.ca_cert_dir)
            .map_err(|e| fail(format!("{}: {e}", config.ca_cert_dir)))?;
        for entry in entries.flatten() {
            if let Ok(certs) = CertificateDer::pem_file_iter(entry.path()) {
                for cert in certs.flatten() {
                    let _ = roots.add(cert);
                }
            }
        }
    }
    if roots.is_empty() {
        return Err(fail("no certificate found".into()));
    }
    Ok(Some(Arc::new(roots)))
}

/// A certificate chain and its private key from PEM files.
fn load_pair(
    cert_file: &str,
    key_file: &str,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_file)
        .and_then(|certs| certs.collect())
        .map_err(|e| format!("Failed to load certificate: {cert_file}: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "Failed to load certificate: {cert_file}: no certificate found"
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key_file).map_err(|e| {
        let encrypted = std::fs::read_to_string(key_file)
            .map(|t| t.contains("ENCRYPTED"))
            .unwrap_or(false);
        if encrypted {
            format!("Failed to load private key: {key_file}: encrypted keys are not supported")
        } else {
            format!("Failed to load private key: {key_file}: {e}")
        }
    })?;
    Ok((certs, key))
}

/// Verifies a primary's certificate chain against the CA, but not the name in it (see the
/// module's paragraph).
#[derive(Debug)]
struct ChainOnly(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
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
            .starts_with("Failed to load certificate: /nonexistent/cert.pem"));
    }

    #[test]
    fn protocols_and_suites_are_parsed_as_redis_names_them() {
        assert_eq!(protocol_versions("").unwrap().len(), 2);
        assert_eq!(protocol_versions("TLSv1.2").unwrap().len(), 1);
        assert_eq!(protocol_versions("tlsv1.2 TLSv1.3").unwrap().len(), 2);
        assert!(protocol_versions("TLSv1.1").is_err());
        assert!(protocol_versions("SSLv3")
            .unwrap_err()
            .starts_with("Invalid tls-protocols"));
        let config = TlsConfig {
            ciphersuites: "TLS_CHACHA20_POLY1305_SHA256".into(),
            ciphers: "ECDHE-RSA-AES128-GCM-SHA256".into(),
            ..TlsConfig::default()
        };
        let suites: Vec<CipherSuite> = provider(&config)
            .unwrap()
            .cipher_suites
            .iter()
            .map(|s| s.suite())
            .collect();
        assert_eq!(
            suites,
            [
                CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
                CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
            ]
        );
        let keywords = TlsConfig {
            ciphers: "DEFAULT:!aNULL".into(),
            ..TlsConfig::default()
        };
        assert_eq!(provider(&keywords).unwrap().cipher_suites.len(), 9);
        let nonsense = TlsConfig {
            ciphersuites: "nonsense".into(),
            ..TlsConfig::default()
        };
        assert!(provider(&nonsense).is_err());
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
