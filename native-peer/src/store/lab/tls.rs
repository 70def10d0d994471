//! TLS to the lab database, read from the URL as libpq reads it, so a URL that works with
//! `psql` works here: `sslmode` `disable` (plain), `allow`/`prefer` (the default: encrypted
//! when the server offers it), `require` (encrypted or no connection), `verify-ca` (and the
//! server's certificate chains to a trusted root) and `verify-full` (and names the host);
//! `sslrootcert=FILE` gives those roots (PEM; `system` or none: the Mozilla roots), and with it
//! `require` verifies the chain, as libpq does. Like libpq, `prefer` and `require` without a
//! root certificate do not verify the server: they keep the traffic from being read on the
//! wire, not from a server that pretends to be the database (Debian's default cluster has a
//! self-signed certificate that nothing could verify). rustls with ring: no OpenSSL to link.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode;

use super::LabError;

/// How the connection is protected, as the URL asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tls {
    /// What tokio-postgres is told: disable, prefer or require.
    pub mode: SslMode,
    /// What is checked of the server's certificate.
    pub check: Check,
    /// Trusted roots (PEM); none: the Mozilla roots.
    pub root_cert: Option<PathBuf>,
}

/// What is checked of the server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// Nothing (encrypted only).
    Nothing,
    /// That it chains to a trusted root.
    Chain,
    /// That it chains to a trusted root and names the host.
    ChainAndName,
}

/// Reads `sslmode` and `sslrootcert` out of the URL's query: the settings, and the URL without
/// them (tokio-postgres knows only `disable`, `prefer` and `require`, and no `sslrootcert`).
pub(crate) fn from_url(url: &str) -> Result<(String, Tls), LabError> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let (mut sslmode, mut root_cert) = (None, None);
    let mut kept: Vec<String> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("sslmode", value)) => sslmode = Some(value.to_string()),
            Some(("sslrootcert", value)) => root_cert = Some(percent_decoded(value)?),
            _ => kept.push(pair.to_string()),
        }
    }
    let root_cert = root_cert.filter(|r| r != "system").map(PathBuf::from);
    let (mode, check) = match sslmode.as_deref().unwrap_or("prefer") {
        "disable" => (SslMode::Disable, Check::Nothing),
        "allow" | "prefer" => (SslMode::Prefer, Check::Nothing),
        "require" if root_cert.is_some() => (SslMode::Require, Check::Chain),
        "require" => (SslMode::Require, Check::Nothing),
        "verify-ca" => (SslMode::Require, Check::Chain),
        "verify-full" => (SslMode::Require, Check::ChainAndName),
        other => {
            return Err(LabError::Url(format!(
                "sslmode={other}: use disable, prefer, require, verify-ca or verify-full"
            )));
        }
    };
    kept.push(
        match mode {
            SslMode::Disable => "sslmode=disable",
            SslMode::Require => "sslmode=require",
            _ => "sslmode=prefer",
        }
        .to_string(),
    );
    let tls = Tls {
        mode,
        check,
        root_cert,
    };
    Ok((format!("{base}?{}", kept.join("&")), tls))
}

/// `%2F` and the like decoded (a path in a URL).
fn percent_decoded(value: &str) -> Result<String, LabError> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = value
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| LabError::Url(format!("sslrootcert={value}: a bad % escape")))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| LabError::Url(format!("sslrootcert={value}: not UTF-8")))
}

impl Tls {
    /// The rustls connector for these settings; an error if the root certificates cannot be
    /// read (said when the store is given, before anything runs).
    pub(crate) fn connector(&self) -> Result<tokio_postgres_rustls::MakeRustlsConnect, LabError> {
        #[allow(
            deprecated,
            reason = "ring is the provider built here (aws-lc-rs needs cmake and a C build); \
                      its lack of post-quantum key exchange is rustls' reason"
        )]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| LabError::Tls(e.to_string()))?;
        let chain = match self.check {
            Check::Nothing => None,
            Check::Chain | Check::ChainAndName => Some(
                WebPkiServerVerifier::builder_with_provider(
                    Arc::new(self.roots()?),
                    provider.clone(),
                )
                .build()
                .map_err(|e| LabError::Tls(e.to_string()))?,
            ),
        };
        let verifier = Arc::new(Verifier {
            provider,
            chain,
            any_name: self.check != Check::ChainAndName,
        });
        let config = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
    }

    /// The trusted roots: `sslrootcert`'s certificates, or the Mozilla roots.
    fn roots(&self) -> Result<RootCertStore, LabError> {
        let Some(path) = &self.root_cert else {
            return Ok(RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            });
        };
        let unreadable = |e: &dyn std::fmt::Display| {
            LabError::Url(format!("sslrootcert={}: {e}", path.display()))
        };
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(path).map_err(|e| unreadable(&e))? {
            roots
                .add(cert.map_err(|e| unreadable(&e))?)
                .map_err(|e| unreadable(&e))?;
        }
        if roots.is_empty() {
            return Err(unreadable(&"no certificate in it"));
        }
        Ok(roots)
    }
}

/// The server's certificate checked as the settings ask: its chain against the roots (`chain`;
/// none: not checked, `prefer` and `require` without roots), the name it is for too unless
/// `any_name` (`verify-ca`). The handshake's signatures are always checked: it is the key the
/// server holds that encrypts the session.
#[derive(Debug)]
struct Verifier {
    provider: Arc<CryptoProvider>,
    chain: Option<Arc<WebPkiServerVerifier>>,
    any_name: bool,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if self.any_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_is_read_as_libpq_reads_it() {
        let read = |url: &str| from_url(url).map(|(u, t)| (u, t.mode, t.check, t.root_cert));
        assert_eq!(
            read("postgres://u@db/lab").unwrap(),
            (
                "postgres://u@db/lab?sslmode=prefer".into(),
                SslMode::Prefer,
                Check::Nothing,
                None
            )
        );
        assert_eq!(
            read("postgres://u@db/lab?application_name=x&sslmode=require").unwrap(),
            (
                "postgres://u@db/lab?application_name=x&sslmode=require".into(),
                SslMode::Require,
                Check::Nothing,
                None
            )
        );
        let (url, mode, check, root) =
            read("postgres://u@db/lab?sslrootcert=%2Fetc%2Fca.pem&sslmode=require").unwrap();
        assert_eq!(
            (url.as_str(), mode, check, root),
            (
                "postgres://u@db/lab?sslmode=require",
                SslMode::Require,
                Check::Chain,
                Some(PathBuf::from("/etc/ca.pem"))
            )
        );
        assert_eq!(
            read("postgres://u@db/lab?sslmode=verify-full&sslrootcert=system")
                .unwrap()
                .2,
            Check::ChainAndName
        );
        assert_eq!(
            read("postgres://u@db/lab?sslmode=verify-ca").unwrap().2,
            Check::Chain
        );
        assert_eq!(
            read("postgres://u@db/lab?sslmode=disable").unwrap().1,
            SslMode::Disable
        );
        for bad in [
            "postgres://u@db/lab?sslmode=always",
            "postgres://u@db/lab?sslrootcert=%zz",
        ] {
            assert!(read(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn root_certificates_that_cannot_be_read_are_said() {
        let tls = |root: &str| Tls {
            mode: SslMode::Require,
            check: Check::ChainAndName,
            root_cert: Some(PathBuf::from(root)),
        };
        let err = tls("/nonexistent/ca.pem").connector().err().unwrap();
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
        let err = tls("/etc/hostname").connector().err().unwrap();
        assert!(err.to_string().contains("no certificate"), "{err}");
        let mozilla = Tls {
            root_cert: None,
            ..tls("")
        };
        assert!(mozilla.connector().is_ok());
    }
}
