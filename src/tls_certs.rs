//! Throw-away certificates for testing a client's TLS path against an in-process server: a CA,
//! a server certificate it signed (for `localhost`, `127.0.0.1` and `::1`, usable as a client
//! certificate too, as Redis uses its server certificate for replication when no client one is
//! set) and a client certificate, written as PEM files into a temporary directory that lives as
//! long as the [`TestCerts`]. [`crate::ServerBuilder::tls_test_certs`] makes a set and points
//! the server's `tls-*` parameters at it; a test points its client at the same files, or takes a
//! ready rustls configuration from [`TestCerts::client_config`].

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// A CA, a server certificate and a client certificate in a temporary directory (removed on
/// drop). See the module's paragraph.
///
/// ```
/// use std::io::{Read, Write};
/// let server = embedis::Server::builder().tls_test_certs().start().unwrap();
/// let certs = server.tls_certs().unwrap();
/// // Any TLS client: point it at `certs.ca_cert_path()`, `client_cert_path()`,
/// // `client_key_path()`; or use the rustls configuration made from them.
/// let tcp = std::net::TcpStream::connect(server.tls_addr().unwrap()).unwrap();
/// let connection = rustls::ClientConnection::new(
///     std::sync::Arc::new(certs.client_config()),
///     "localhost".try_into().unwrap(),
/// )
/// .unwrap();
/// let mut tls = rustls::StreamOwned::new(connection, tcp);
/// tls.write_all(b"PING\r\n").unwrap();
/// let mut reply = [0u8; 7];
/// tls.read_exact(&mut reply).unwrap();
/// assert_eq!(&reply, b"+PONG\r\n");
/// ```
pub struct TestCerts {
    dir: PathBuf,
    ca_cert_pem: String,
    client_cert_pem: String,
    client_key_pem: String,
}

impl TestCerts {
    /// Makes a new CA and the two certificates it signs, in a new temporary directory.
    pub fn generate() -> io::Result<TestCerts> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "embedis-tls-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        let certs = TestCerts::write_into(&dir);
        if certs.is_err() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        certs
    }

    fn write_into(dir: &Path) -> io::Result<TestCerts> {
        let invalid = |e: rcgen::Error| io::Error::other(e.to_string());
        let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(invalid)?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "embedis test CA");
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().map_err(invalid)?)
            .map_err(invalid)?;

        let leaf = |names: Vec<String>, common_name: &str, usages: Vec<ExtendedKeyUsagePurpose>| {
            let mut params = CertificateParams::new(names).map_err(invalid)?;
            params
                .distinguished_name
                .push(DnType::CommonName, common_name);
            params.extended_key_usages = usages;
            params.key_usages = vec![
                KeyUsagePurpose::DigitalSignature,
                KeyUsagePurpose::KeyEncipherment,
            ];
            let key = KeyPair::generate().map_err(invalid)?;
            let cert = params.signed_by(&key, &ca).map_err(invalid)?;
            Ok::<_, io::Error>((cert.pem(), key.serialize_pem()))
        };
        let (server_cert, server_key) = leaf(
            vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            "embedis test server",
            vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        )?;
        let (client_cert, client_key) = leaf(
            Vec::new(),
            "embedis test client",
            vec![ExtendedKeyUsagePurpose::ClientAuth],
        )?;
        let ca_pem = ca.pem();
        for (name, text) in [
            ("ca.crt", &ca_pem),
            ("server.crt", &server_cert),
            ("server.key", &server_key),
            ("client.crt", &client_cert),
            ("client.key", &client_key),
        ] {
            std::fs::write(dir.join(name), text)?;
        }
        Ok(TestCerts {
            dir: dir.to_path_buf(),
            ca_cert_pem: ca_pem,
            client_cert_pem: client_cert,
            client_key_pem: client_key,
        })
    }

    /// The directory holding the files (`ca.crt`, `server.crt`, `server.key`, `client.crt`,
    /// `client.key`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The CA certificate (`tls-ca-cert-file`, a client's `--cacert`).
    pub fn ca_cert_path(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// The server's certificate and key (`tls-cert-file`, `tls-key-file`).
    pub fn server_cert_path(&self) -> PathBuf {
        self.dir.join("server.crt")
    }

    pub fn server_key_path(&self) -> PathBuf {
        self.dir.join("server.key")
    }

    /// The client's certificate and key (a client's `--cert`, `--key`).
    pub fn client_cert_path(&self) -> PathBuf {
        self.dir.join("client.crt")
    }

    pub fn client_key_path(&self) -> PathBuf {
        self.dir.join("client.key")
    }

    /// The CA certificate as PEM text.
    pub fn ca_cert_pem(&self) -> &str {
        &self.ca_cert_pem
    }

    /// The client certificate and its key as PEM text.
    pub fn client_cert_pem(&self) -> &str {
        &self.client_cert_pem
    }

    pub fn client_key_pem(&self) -> &str {
        &self.client_key_pem
    }

    /// A rustls client configuration that trusts the CA and presents the client certificate.
    pub fn client_config(&self) -> rustls::ClientConfig {
        use rustls_pki_types::pem::PemObject;
        use rustls_pki_types::{CertificateDer, PrivateKeyDer};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(self.ca_cert_pem.as_bytes()) {
            roots
                .add(cert.expect("our CA parses"))
                .expect("our CA is valid");
        }
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(self.client_cert_pem.as_bytes())
                .collect::<Result<_, _>>()
                .expect("our client certificate parses");
        let key = PrivateKeyDer::from_pem_slice(self.client_key_pem.as_bytes())
            .expect("our client key parses");
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default versions")
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .expect("the client key matches its certificate")
    }

    /// Points a server configuration's `tls-*` parameters at these files.
    pub(crate) fn configure(&self, tls: &mut embedis_core::base::tls::TlsConfig) {
        let text = |p: PathBuf| p.display().to_string();
        tls.cert_file = text(self.server_cert_path());
        tls.key_file = text(self.server_key_path());
        tls.ca_cert_file = text(self.ca_cert_path());
    }
}

impl Drop for TestCerts {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
