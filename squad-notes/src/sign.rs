//! Signed entries (feature `sign`): an SSH signature over the canonical form of an entry,
//! stored in the entry itself, checked against git's allowed-signers file.
//!
//! - **What is signed.** The RFC 8785 (JSON Canonicalization Scheme) form of the entry as a JSON
//!   object, without its `sig` and `carried_from` keys, as UTF-8 without a final newline
//!   ([`canonical_bytes`]). So an entry stored with another key order or other escapes still
//!   verifies, and a copy made by `squad notes carry` (which adds `carried_from`) keeps a valid
//!   signature.
//! - **The signature.** An SSH signature (`SSHSIG`, namespace [`NAMESPACE`], SHA-512), stored in
//!   the entry's `sig` field as the armored text `ssh-keygen -Y sign` writes
//!   (`-----BEGIN SSH SIGNATURE-----` … `-----END SSH SIGNATURE-----`, final newline included).
//!   `ssh-keygen -Y verify -n squad-note` accepts it over [`canonical_bytes`], and signatures
//!   made by `ssh-keygen -Y sign -n squad-note` over those bytes verify here.
//! - **The key.** As git configures SSH signing: `gpg.format = ssh` and `user.signingKey`, the
//!   path of the private key or of the `.pub` beside it ([`SigningKey::from_git_config`]). The
//!   key is read from the file (no agent); a passphrase-protected key is refused.
//! - **Checking.** [`verify_entry`] against git's `gpg.ssh.allowedSignersFile`
//!   ([`AllowedSigners`]): `signed-verified` only when the signature is valid **and** the key is
//!   listed for the required principal (for an entry in namespace `<agent>`, the principal
//!   `<agent>`; in the shared namespaces, the entry's `agent`). A valid signature by a key that
//!   is not listed for that principal (or with no allowed-signers file) is
//!   `signed-unknown-key`; a signature that does not verify is `signed-bad`.
//!
//! The keys and signatures are the `ssh-key` crate's (RustCrypto); canonical JSON is the
//! `serde_json_canonicalizer` crate's.

use std::path::{Path, PathBuf};

use serde_json::Value;
use ssh_key::{HashAlg, LineEnding, PrivateKey, PublicKey, SshSig};

use crate::{Error, ErrorKind, Result};

/// The SSH signature namespace of entry signatures (`ssh-keygen -Y … -n squad-note`).
pub const NAMESPACE: &str = "squad-note";
/// The entry key that holds the signature.
pub const SIG_KEY: &str = "sig";
/// The entry key a carried copy adds (not covered by the signature).
pub const CARRIED_FROM_KEY: &str = "carried_from";

/// The bytes an entry's signature covers: the RFC 8785 canonical JSON of `entry` without its
/// `sig` and `carried_from` keys, UTF-8, no final newline.
///
/// # Errors
///
/// [`ErrorKind::InvalidInput`] when `entry` is not a JSON object or holds a number RFC 8785
/// cannot represent.
///
/// ```
/// let entry = serde_json::json!({"type": "decision", "id": "x", "sig": "…", "b": 1.50});
/// assert_eq!(
///     squad_notes::sign::canonical_bytes(&entry)?,
///     br#"{"b":1.5,"id":"x","type":"decision"}"#
/// );
/// # Ok::<(), squad_notes::Error>(())
/// ```
pub fn canonical_bytes(entry: &Value) -> Result<Vec<u8>> {
    let Value::Object(map) = entry else {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "sign.canonical",
            "a note entry must be a JSON object",
        ));
    };
    let mut map = map.clone();
    map.remove(SIG_KEY);
    map.remove(CARRIED_FROM_KEY);
    serde_json_canonicalizer::to_vec(&Value::Object(map)).map_err(|e| {
        Error::new(
            ErrorKind::InvalidInput,
            "sign.canonical",
            format!("the entry has no canonical JSON form: {e}"),
        )
    })
}

/// A private SSH key that signs entries.
pub struct SigningKey {
    key: PrivateKey,
    path: PathBuf,
}

impl std::fmt::Debug for SigningKey {
    /// The key's path and public half, never its secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("path", &self.path)
            .field("algorithm", &self.key.algorithm().as_str())
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// Reads the OpenSSH private key at `path`; a path ending in `.pub` names the private key
    /// beside it (as git's `user.signingKey` may).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when the file cannot be read, [`ErrorKind::InvalidInput`] when it
    /// is not an OpenSSH private key or is protected by a passphrase.
    pub fn from_file(path: &Path) -> Result<Self> {
        let private = match path.extension() {
            Some(ext) if ext == "pub" => path.with_extension(""),
            _ => path.to_owned(),
        };
        let text = std::fs::read_to_string(&private).map_err(|e| {
            Error::new(
                ErrorKind::NotFound,
                "sign.key",
                format!("cannot read the signing key {}", private.display()),
            )
            .with_source(e)
        })?;
        let key = PrivateKey::from_openssh(text.as_bytes()).map_err(|e| {
            Error::new(
                ErrorKind::InvalidInput,
                "sign.key",
                format!("{} is not an OpenSSH private key: {e}", private.display()),
            )
        })?;
        if key.is_encrypted() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "sign.key",
                format!(
                    "the signing key {} is protected by a passphrase; squad reads the key file \
                     itself (no agent): use a key without a passphrase for squad notes",
                    private.display()
                ),
            ));
        }
        Ok(Self { key, path: private })
    }

    /// The key git signs with in the repository at `repo_dir`: `user.signingKey` (a path;
    /// `~/` is the home directory), with `gpg.format` set to `ssh`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] when `gpg.format` is not `ssh`, when `user.signingKey` is not
    /// set or is a literal key (`key::…`, which needs an agent), and the errors of
    /// [`SigningKey::from_file`].
    #[cfg(feature = "gix")]
    pub fn from_git_config(repo_dir: &Path) -> Result<Self> {
        let config = GitConfig::open(repo_dir)?;
        let format = config.string("gpg.format").unwrap_or_default();
        if !format.eq_ignore_ascii_case("ssh") {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "sign.key",
                format!(
                    "signed entries use SSH signatures, but git config gpg.format is {:?}; \
                     set it with: git config gpg.format ssh",
                    if format.is_empty() {
                        "openpgp"
                    } else {
                        &format
                    }
                ),
            ));
        }
        let Some(value) = config.string("user.signingKey").filter(|v| !v.is_empty()) else {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "sign.key",
                "git config user.signingKey is not set; set it to your SSH key: \
                 git config user.signingKey ~/.ssh/id_ed25519.pub",
            ));
        };
        if value.starts_with("key::") || value.starts_with("ssh-") {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "sign.key",
                "git config user.signingKey holds a key, not a path; squad reads the key file \
                 itself (no agent): set it to the path of the key",
            ));
        }
        Self::from_file(&config.path(&value))
    }

    /// The public key, in OpenSSH form (`ssh-ed25519 AAAA…`).
    pub fn public_key(&self) -> String {
        self.key.public_key().to_openssh().unwrap_or_default()
    }

    /// Signs `entry` (a JSON object, its `sig` and `carried_from` ignored) and returns the
    /// armored signature, as `ssh-keygen -Y sign -n squad-note` writes it.
    ///
    /// # Errors
    ///
    /// As [`canonical_bytes`]; [`ErrorKind::Backend`] when signing fails.
    pub fn sign(&self, entry: &Value) -> Result<String> {
        let message = canonical_bytes(entry)?;
        let sig = self
            .key
            .sign(NAMESPACE, HashAlg::Sha512, &message)
            .map_err(|e| {
                Error::new(
                    ErrorKind::Backend,
                    "sign.sign",
                    format!("cannot sign with {}: {e}", self.path.display()),
                )
            })?;
        armor(&sig)
    }
}

/// The armored text of `sig` as ssh-keygen writes it: 70 columns, `\n`, a final newline.
fn armor(sig: &SshSig) -> Result<String> {
    let mut pem = sig.to_pem(LineEnding::LF).map_err(|e| {
        Error::new(
            ErrorKind::Backend,
            "sign.sign",
            format!("cannot encode the signature: {e}"),
        )
    })?;
    if !pem.ends_with('\n') {
        pem.push('\n');
    }
    Ok(pem)
}

/// How an entry's signature checks out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SignatureStatus {
    /// A valid signature by a key the allowed-signers file lists for the required principal.
    Verified,
    /// A valid signature, but by a key not listed for the required principal (or there is no
    /// allowed-signers file to say).
    UnknownKey,
    /// A `sig` that is not a valid signature of this entry (tampered, malformed, another
    /// namespace).
    Bad,
    /// No `sig`.
    Unsigned,
}

impl SignatureStatus {
    /// The name `squad notes verify` prints: `signed-verified`, `signed-unknown-key`,
    /// `signed-bad` or `unsigned`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SignatureStatus::Verified => "signed-verified",
            SignatureStatus::UnknownKey => "signed-unknown-key",
            SignatureStatus::Bad => "signed-bad",
            SignatureStatus::Unsigned => "unsigned",
        }
    }
}

impl std::fmt::Display for SignatureStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of [`verify_entry`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// The status.
    pub status: SignatureStatus,
    /// The principals the allowed-signers file lists for the signing key (empty when it lists
    /// none, or for an unsigned or bad entry).
    pub principals: Vec<String>,
}

/// One line of an allowed-signers file.
#[derive(Debug, Clone)]
struct Signer {
    principals: Vec<String>,
    namespaces: Option<Vec<String>>,
    key: PublicKey,
}

/// git's `gpg.ssh.allowedSignersFile`, in the format of ssh-keygen's `ALLOWED SIGNERS`: one
/// `principals [options] keytype base64-key [comment]` line per key. Principals are
/// comma-separated patterns (`*` and `?` wildcards, `!` to exclude); the `namespaces="…"`
/// option limits a key to those namespaces; `cert-authority` lines (certificates) are not
/// supported and are skipped, as are lines that cannot be read.
#[derive(Debug, Clone, Default)]
pub struct AllowedSigners {
    signers: Vec<Signer>,
}

impl AllowedSigners {
    /// Parses the text of an allowed-signers file.
    pub fn parse(text: &str) -> Self {
        let signers = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(parse_signer)
            .collect();
        Self { signers }
    }

    /// Reads the allowed-signers file at `path`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when it cannot be read.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::new(
                ErrorKind::NotFound,
                "sign.allowed_signers",
                format!("cannot read the allowed-signers file {}", path.display()),
            )
            .with_source(e)
        })?;
        Ok(Self::parse(&text))
    }

    /// The file git's `gpg.ssh.allowedSignersFile` names in the repository at `repo_dir`
    /// (`~/` is the home directory, a relative path is relative to the work tree), read;
    /// `Ok(None)` when it is not set or the file does not exist.
    ///
    /// # Errors
    ///
    /// When the repository cannot be opened or the file exists but cannot be read.
    #[cfg(feature = "gix")]
    pub fn from_git_config(repo_dir: &Path) -> Result<Option<Self>> {
        let config = GitConfig::open(repo_dir)?;
        let Some(value) = config
            .string("gpg.ssh.allowedSignersFile")
            .filter(|v| !v.is_empty())
        else {
            return Ok(None);
        };
        let path = config.path(&value);
        if !path.exists() {
            return Ok(None);
        }
        Self::from_file(&path).map(Some)
    }

    /// The lines of this file that list `key` in namespace [`NAMESPACE`], in file order.
    fn signers_of<'a>(
        &'a self,
        key: &'a ssh_key::public::KeyData,
    ) -> impl Iterator<Item = &'a Signer> + 'a {
        self.signers.iter().filter(move |s| {
            s.key.key_data() == key
                && s.namespaces
                    .as_ref()
                    .is_none_or(|ns| ns.iter().any(|n| glob(n, NAMESPACE)))
        })
    }

    /// The principals this file lists for `key` in namespace [`NAMESPACE`].
    fn principals_of(&self, key: &ssh_key::public::KeyData) -> Vec<String> {
        self.signers_of(key)
            .flat_map(|s| s.principals.iter().cloned())
            .collect()
    }

    /// `true` when this file lists `key` for `principal` in namespace [`NAMESPACE`].
    fn allows(&self, key: &ssh_key::public::KeyData, principal: &str) -> bool {
        self.signers_of(key)
            .any(|s| principal_matches(&s.principals, principal))
    }
}

fn parse_signer(line: &str) -> Option<Signer> {
    let (principals, rest) = split_word(line)?;
    let mut rest = rest.trim_start();
    let mut namespaces = None;
    // Options come before the key type; the key type starts with `ssh-`, `ecdsa-` or `sk-`.
    let looks_like_key =
        |s: &str| s.starts_with("ssh-") || s.starts_with("ecdsa-") || s.starts_with("sk-");
    if !looks_like_key(rest) {
        let (options, after) = split_word(rest)?;
        for option in split_options(options) {
            let lower = option.to_ascii_lowercase();
            if lower == "cert-authority" {
                return None;
            }
            if let Some(value) = lower.strip_prefix("namespaces=") {
                let value = &option[option.len() - value.len()..];
                let value = value.trim_matches('"');
                namespaces = Some(value.split(',').map(|s| s.trim().to_owned()).collect());
            }
        }
        rest = after.trim_start();
    }
    let key = PublicKey::from_openssh(rest).ok()?;
    Some(Signer {
        principals: principals
            .trim_matches('"')
            .split(',')
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty())
            .collect(),
        namespaces,
        key,
    })
}

/// The first word of `s` (a double-quoted run may contain spaces) and the rest.
fn split_word(s: &str) -> Option<(&str, &str)> {
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ' ' | '\t' if !quoted => return Some((&s[..i], &s[i..])),
            _ => {}
        }
    }
    None
}

/// Comma-separated options, commas inside double quotes kept.
fn split_options(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut quoted = false;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// ssh's pattern-list rule: a negated pattern that matches refuses, else any match accepts.
fn principal_matches(patterns: &[String], principal: &str) -> bool {
    let mut found = false;
    for p in patterns {
        match p.strip_prefix('!') {
            Some(neg) if glob(neg, principal) => return false,
            Some(_) => {}
            None if glob(p, principal) => found = true,
            None => {}
        }
    }
    found
}

/// `*` (any run) and `?` (one character) wildcards, as ssh matches principals.
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Checks the signature of one entry, given as the JSON text it is stored as.
///
/// `principal` is the principal the signing key must be listed for (for an entry in namespace
/// `<agent>`: `<agent>`; in the shared namespaces: the entry's `agent`). Without `allowed`
/// (no allowed-signers file), nothing is [`SignatureStatus::Verified`].
///
/// Never fails: text that is not a JSON object, or a `sig` that is not a string holding an
/// armored SSH signature, is [`SignatureStatus::Bad`].
pub fn verify_entry(
    entry_text: &str,
    principal: &str,
    allowed: Option<&AllowedSigners>,
) -> Verification {
    let bad = Verification {
        status: SignatureStatus::Bad,
        principals: Vec::new(),
    };
    let Ok(value) = serde_json::from_str::<Value>(entry_text) else {
        return bad;
    };
    let Some(sig) = value.get(SIG_KEY) else {
        return Verification {
            status: SignatureStatus::Unsigned,
            principals: Vec::new(),
        };
    };
    let Some(sig) = sig.as_str().and_then(|s| SshSig::from_pem(s).ok()) else {
        return bad;
    };
    let Ok(message) = canonical_bytes(&value) else {
        return bad;
    };
    if sig.namespace() != NAMESPACE {
        return bad;
    }
    let key = PublicKey::from(sig.public_key().clone());
    if key.verify(NAMESPACE, &message, &sig).is_err() {
        return bad;
    }
    let Some(allowed) = allowed else {
        return Verification {
            status: SignatureStatus::UnknownKey,
            principals: Vec::new(),
        };
    };
    let principals = allowed.principals_of(sig.public_key());
    let status = if allowed.allows(sig.public_key(), principal) {
        SignatureStatus::Verified
    } else {
        SignatureStatus::UnknownKey
    };
    Verification { status, principals }
}

/// The few git settings signing needs, read once.
#[cfg(feature = "gix")]
struct GitConfig {
    repo: gix::Repository,
    work_dir: PathBuf,
}

#[cfg(feature = "gix")]
impl GitConfig {
    fn open(repo_dir: &Path) -> Result<Self> {
        let repo = gix::discover(repo_dir).map_err(|e| {
            Error::new(
                ErrorKind::NotFound,
                "sign.config",
                format!("not a git repository: {}", repo_dir.display()),
            )
            .with_source(e)
        })?;
        let work_dir = repo
            .workdir()
            .map(Path::to_owned)
            .unwrap_or_else(|| repo.git_dir().to_owned());
        Ok(Self { repo, work_dir })
    }

    fn string(&self, key: &str) -> Option<String> {
        use gix::bstr::ByteSlice;
        self.repo
            .config_snapshot()
            .string(key)
            .map(|v| v.to_str_lossy().trim().to_owned())
    }

    /// A path setting: `~/` is the home directory, a relative path is taken from the work tree.
    fn path(&self, value: &str) -> PathBuf {
        if let Some(rest) = value.strip_prefix("~/")
            && let Some(home) = std::env::var_os("HOME")
        {
            return PathBuf::from(home).join(rest);
        }
        let path = PathBuf::from(value);
        if path.is_absolute() {
            path
        } else {
            self.work_dir.join(path)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_match_like_ssh() {
        let p = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert!(principal_matches(&p(&["data"]), "data"));
        assert!(!principal_matches(&p(&["data"]), "worf"));
        assert!(principal_matches(&p(&["d*", "!dx"]), "data"));
        assert!(!principal_matches(&p(&["d*", "!dx"]), "dx"));
        assert!(principal_matches(&p(&["?orf"]), "worf"));
        assert!(glob("*", ""));
        assert!(!glob("a", ""));
    }
}
