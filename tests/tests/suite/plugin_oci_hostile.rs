//! Registries that attack the installer, through the real binary against small loopback
//! servers written here: a manifest (or a signature manifest) that never ends is cut off at
//! the 4 MiB cap while it is read, not after; a layer that trickles is cut off at the download
//! deadline (`PADDOCK_DOWNLOAD_TIMEOUT_SECS`); a token service on another host, and a redirect
//! to another host, never receive the registry password. (https to http is refused by a rule
//! unit-tested in `plugin_store/remote/hop.rs`: a loopback https registry would need a
//! certificate the binary trusts.)

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::agent_common::{Project, text};
use crate::plugin_oci::{assert_nothing_installed, base64, header, sha256_hex, wasm_manifest};

/// What a fake registry answers one request with: it writes the whole response itself.
type Answer = dyn Fn(&str, &str, &str, &mut TcpStream) + Send + Sync;

/// A loopback server that keeps every request's head and answers each connection on its own
/// thread.
struct Fake {
    addr: String,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Fake {
    fn start(answer: Arc<Answer>) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let answer = answer.clone();
                let seen = seen.clone();
                std::thread::spawn(move || serve(stream, &*answer, &seen));
            }
        });
        Fake { addr, heads }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

fn serve(mut stream: TcpStream, answer: &Answer, seen: &Mutex<Vec<String>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    loop {
        let mut request = Vec::new();
        let mut byte = [0u8; 1];
        while !request.ends_with(b"\r\n\r\n") {
            match stream.read(&mut byte) {
                Ok(1) => request.push(byte[0]),
                _ => return,
            }
        }
        let head = String::from_utf8_lossy(&request).into_owned();
        let length: usize = header(&head, "content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; length];
        if stream.read_exact(&mut body).is_err() {
            return;
        }
        seen.lock().unwrap().push(head.clone());
        let mut words = head.split_whitespace();
        let (method, path) = (
            words.next().unwrap_or("").to_string(),
            words.next().unwrap_or("").to_string(),
        );
        answer(&method, &path, &head, &mut stream);
        if head.to_ascii_lowercase().contains("connection: close") {
            return;
        }
    }
}

fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) {
    let mut out = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    let _ = stream.write_all(&bytes);
}

/// Runs paddock (anonymous unless `env` names a docker configuration), killed past `limit`:
/// its output and how long it took, or a panic naming the hang.
fn run_within(
    project: &Project,
    args: &[&str],
    env: &[(&str, &str)],
    limit: Duration,
) -> (Output, Duration) {
    let none = project.home.path().join("no-docker-config");
    let mut cmd: Command = project.command(args);
    cmd.env("DOCKER_CONFIG", &none);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let started = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run paddock");
    while started.elapsed() < limit {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            return (out, started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    panic!(
        "paddock {args:?} still ran after {limit:?}: a hostile registry held it\n{}",
        text(&out)
    );
}

/// One artifact's manifest (in the wasm layout) and its digest, the layer `layer` long.
fn artifact(layer: &[u8]) -> (Vec<u8>, String, String) {
    let config = br#"{"architecture":"wasm","os":"wasip2"}"#;
    let config_digest = format!("sha256:{}", sha256_hex(config));
    let layer_digest = format!("sha256:{}", sha256_hex(layer));
    let manifest = wasm_manifest(
        &config_digest,
        config.len(),
        &[("application/wasm", &layer_digest, layer.len() as u64)],
    );
    let digest = format!("sha256:{}", sha256_hex(&manifest));
    (manifest, digest, layer_digest)
}

const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const UNKNOWN: &[u8] = br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}"#;

/// Answers `/v2/` and the manifest of `x/fs` (by tag `1.0` and by `digest`) as a registry
/// would; false for any other path.
fn serve_artifact(
    method: &str,
    path: &str,
    stream: &mut TcpStream,
    manifest: &[u8],
    digest: &str,
) -> bool {
    if path == "/v2/" {
        respond(stream, "200 OK", &[], b"{}");
        return true;
    }
    if path != "/v2/x/fs/manifests/1.0" && path != format!("/v2/x/fs/manifests/{digest}") {
        return false;
    }
    let body: &[u8] = if method == "HEAD" { b"" } else { manifest };
    let headers = [
        ("Docker-Content-Digest", digest),
        ("Content-Type", MANIFEST),
    ];
    respond(stream, "200 OK", &headers, body);
    true
}

/// A registry of `x/fs:1.0` whose answer at `endless` (a path) is a body that never ends:
/// it counts what it wrote until the connection closed.
fn endless_at(
    endless: impl Fn(&str) -> bool + Send + Sync + 'static,
) -> (Fake, Arc<AtomicU64>, Arc<AtomicBool>) {
    let (manifest, digest, _) = artifact(b"not fetched");
    let written = Arc::new(AtomicU64::new(0));
    let closed = Arc::new(AtomicBool::new(false));
    let (w, c) = (written.clone(), closed.clone());
    let answer: Arc<Answer> = Arc::new(move |method, path, _head, stream| {
        if endless(path) {
            let _ = stream.write_all(
                format!("HTTP/1.1 200 OK\r\nContent-Type: {MANIFEST}\r\nConnection: close\r\n\r\n{{\"schemaVersion\":2,\"pad\":\"")
                    .as_bytes(),
            );
            let chunk = vec![b'a'; 64 << 10];
            // At most 1 GiB: a client that reads it whole takes it all.
            for _ in 0..(1 << 14) {
                if stream.write_all(&chunk).is_err() {
                    break;
                }
                w.fetch_add(chunk.len() as u64, Ordering::SeqCst);
            }
            c.store(true, Ordering::SeqCst);
            return;
        }
        if !serve_artifact(method, path, stream, &manifest, &digest) {
            respond(stream, "404 Not Found", &[], UNKNOWN);
        }
    });
    (Fake::start(answer), written, closed)
}

fn assert_cut_off(
    project: &Project,
    fake: &Fake,
    written: &AtomicU64,
    closed: &AtomicBool,
    args: &[&str],
) {
    let reference = format!("oci://{}/x/fs:1.0", fake.addr);
    let mut all = vec!["plugin", "install", reference.as_str()];
    all.extend_from_slice(args);
    let (out, took) = run_within(project, &all, &[], Duration::from_secs(60));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !closed.load(Ordering::SeqCst) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        closed.load(Ordering::SeqCst),
        "paddock kept the connection open"
    );
    let sent = written.load(Ordering::SeqCst);
    // The cap plus what the loopback socket buffers hold; reading it whole would be 1 GiB.
    assert!(
        sent < 48 << 20,
        "the server wrote {sent} bytes before paddock hung up: {}",
        text(&out)
    );
    assert!(!out.status.success(), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains(&reference), "{shown}");
    assert!(
        shown.contains("over the 4194304 bytes paddock reads"),
        "{shown}"
    );
    assert!(
        shown.contains("stopped reading at 4194305 bytes"),
        "{shown}"
    );
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert_nothing_installed(project);
}

#[test]
fn an_endless_manifest_is_cut_off_at_the_cap_while_it_is_read() {
    let (fake, written, closed) = endless_at(|path| path.starts_with("/v2/x/fs/manifests/sha256:"));
    let project = Project::new(&[]);
    assert_cut_off(&project, &fake, &written, &closed, &["--allow-unsigned"]);
}

#[test]
fn an_endless_signature_manifest_is_cut_off_at_the_cap_while_it_is_read() {
    let (fake, written, closed) = endless_at(|path| path.ends_with(".sig"));
    let project = Project::new(&[]);
    assert_cut_off(&project, &fake, &written, &closed, &[]);
}

#[test]
fn a_layer_that_trickles_is_cut_off_at_the_download_deadline() {
    let layer = vec![b'w'; 4096];
    let (manifest, digest, layer_digest) = artifact(&layer);
    let answer: Arc<Answer> = Arc::new(move |method, path, _head, stream| {
        if serve_artifact(method, path, stream, &manifest, &digest) {
            return;
        }
        if path != format!("/v2/x/fs/blobs/{layer_digest}") {
            return respond(stream, "404 Not Found", &[], UNKNOWN);
        }
        let _ = stream.write_all(
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", layer.len()).as_bytes(),
        );
        // One byte a second: each read is quick, the whole would take over an hour.
        for byte in &layer {
            if stream.write_all(&[*byte]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let fake = Fake::start(answer);
    let project = Project::new(&[]);
    let reference = format!("oci://{}/x/fs:1.0", fake.addr);
    let (out, took) = run_within(
        &project,
        &["plugin", "install", &reference, "--allow-unsigned"],
        &[("PADDOCK_DOWNLOAD_TIMEOUT_SECS", "2")],
        Duration::from_secs(60),
    );
    assert!(!out.status.success(), "{}", text(&out));
    let shown = text(&out);
    assert!(took < Duration::from_secs(20), "took {took:?}: {shown}");
    assert!(shown.contains(&reference), "{shown}");
    assert!(shown.contains("did not finish within 2 s"), "{shown}");
    assert!(shown.contains("bytes received of 4096"), "{shown}");
    assert!(
        shown.contains("PADDOCK_DOWNLOAD_TIMEOUT_SECS"),
        "how to allow longer: {shown}"
    );
    assert_nothing_installed(&project);

    let (out, _) = run_within(
        &project,
        &["plugin", "install", &reference, "--allow-unsigned"],
        &[("PADDOCK_DOWNLOAD_TIMEOUT_SECS", "soon")],
        Duration::from_secs(60),
    );
    assert!(!out.status.success());
    assert!(
        text(&out).contains("is not a whole number of seconds"),
        "{}",
        text(&out)
    );
}

/// A docker configuration holding `user:password` for `addr`.
fn docker_config(addr: &str, user: &str, password: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        format!(
            r#"{{"auths": {{"{addr}": {{"auth": "{}"}}}}}}"#,
            base64(format!("{user}:{password}").as_bytes())
        ),
    )
    .unwrap();
    dir
}

/// A registry whose `/v2/` asks for a bearer token from `realm` (a function of its own
/// address), serving its own `/token` (which answers `own-token`) and 404 for the rest.
fn realm_registry(realm: impl Fn(&str) -> String + Send + Sync + 'static) -> Fake {
    let addr = Arc::new(Mutex::new(String::new()));
    let at = addr.clone();
    let answer: Arc<Answer> = Arc::new(move |_method, path, _head, stream| {
        let realm = realm(&at.lock().unwrap());
        if path == "/v2/" {
            let challenge = format!("Bearer realm=\"{realm}\",service=\"fake\"");
            respond(
                stream,
                "401 Unauthorized",
                &[("WWW-Authenticate", &challenge)],
                b"",
            );
        } else if path.starts_with("/token") {
            respond(
                stream,
                "200 OK",
                &[("Content-Type", "application/json")],
                br#"{"token":"own-token"}"#,
            );
        } else {
            respond(stream, "404 Not Found", &[], UNKNOWN);
        }
    });
    let fake = Fake::start(answer);
    *addr.lock().unwrap() = fake.addr.clone();
    fake
}

const PASSWORD: &str = "s3cret-registry-pw";

/// `fake` was asked (by `what`), and never with credentials.
fn assert_asked_without_credentials(fake: &Fake, what: &str, out: &Output) {
    let heads = fake.heads();
    assert!(!heads.is_empty(), "{what} was never asked: {}", text(out));
    for head in &heads {
        assert!(
            !carries_credentials(head),
            "the other host received credentials:\n{head}"
        );
    }
}

fn carries_credentials(head: &str) -> bool {
    header(head, "authorization").is_some()
        || head.contains(PASSWORD)
        || head.contains(&base64(format!("alice:{PASSWORD}").as_bytes()))
}

#[test]
fn a_token_realm_on_another_port_never_receives_the_registry_password() {
    // The token service elsewhere: it hands out a token to anyone and keeps what it saw.
    let elsewhere = Fake::start(Arc::new(|_method, _path, _head, stream| {
        respond(
            stream,
            "200 OK",
            &[("Content-Type", "application/json")],
            br#"{"token":"anonymous-token"}"#,
        );
    }));
    let realm = format!("http://{}/token", elsewhere.addr);
    let registry = realm_registry(move |_| realm.clone());
    let config = docker_config(&registry.addr, "alice", PASSWORD);
    let project = Project::new(&[]);
    let reference = format!("oci://{}/x/fs:1.0", registry.addr);
    let (out, _) = run_within(
        &project,
        &["plugin", "install", &reference],
        &[("DOCKER_CONFIG", config.path().to_str().unwrap())],
        Duration::from_secs(60),
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert_asked_without_credentials(&elsewhere, "the token service", &out);
    // The anonymous token is what the registry then sees.
    assert!(
        registry
            .heads()
            .iter()
            .any(|h| header(h, "authorization").as_deref() == Some("Bearer anonymous-token")),
        "{:?}",
        registry.heads()
    );

    // The registry's own token service does get them: the rule is the host, not "never".
    let own = realm_registry(|addr| format!("http://{addr}/token"));
    let config = docker_config(&own.addr, "alice", PASSWORD);
    let reference = format!("oci://{}/x/fs:1.0", own.addr);
    let (out, _) = run_within(
        &project,
        &["plugin", "install", &reference],
        &[("DOCKER_CONFIG", config.path().to_str().unwrap())],
        Duration::from_secs(60),
    );
    assert!(!out.status.success(), "{}", text(&out));
    let basic = format!("Basic {}", base64(format!("alice:{PASSWORD}").as_bytes()));
    assert!(
        own.heads().iter().any(|h| h.starts_with("GET /token")
            && header(h, "authorization").as_deref() == Some(basic.as_str())),
        "{:?}",
        own.heads()
    );
}

#[test]
fn a_redirect_to_another_host_gets_no_credentials_and_plain_http_elsewhere_is_refused() {
    let elsewhere = Fake::start(Arc::new(|_method, _path, _head, stream| {
        respond(stream, "404 Not Found", &[], UNKNOWN);
    }));
    let target = Arc::new(Mutex::new(format!(
        "http://{}/v2/x/fs/manifests/1.0",
        elsewhere.addr
    )));
    let to = target.clone();
    let registry = Fake::start(Arc::new(move |_method, path, _head, stream| {
        if path == "/v2/" {
            respond(
                stream,
                "401 Unauthorized",
                &[("WWW-Authenticate", "Basic realm=\"fake\"")],
                b"",
            );
        } else {
            let location = to.lock().unwrap().clone();
            respond(
                stream,
                "307 Temporary Redirect",
                &[("Location", &location)],
                b"",
            );
        }
    }));
    let config = docker_config(&registry.addr, "alice", PASSWORD);
    let docker = config.path().to_str().unwrap().to_string();
    let project = Project::new(&[]);
    let reference = format!("oci://{}/x/fs:1.0", registry.addr);
    let (out, _) = run_within(
        &project,
        &["plugin", "install", &reference],
        &[("DOCKER_CONFIG", &docker)],
        Duration::from_secs(60),
    );
    assert!(!out.status.success(), "{}", text(&out));
    let basic = format!("Basic {}", base64(format!("alice:{PASSWORD}").as_bytes()));
    assert!(
        registry
            .heads()
            .iter()
            .any(|h| header(h, "authorization").as_deref() == Some(basic.as_str())),
        "the registry itself gets the credentials: {:?}",
        registry.heads()
    );
    assert_asked_without_credentials(&elsewhere, "the redirect's target", &out);

    // Plain http to a host that is not this machine: refused before any connection.
    *target.lock().unwrap() = "http://registry.example.invalid/v2/x/fs/manifests/1.0".into();
    let (out, _) = run_within(
        &project,
        &["plugin", "install", &reference],
        &[("DOCKER_CONFIG", &docker)],
        Duration::from_secs(60),
    );
    assert!(!out.status.success(), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains("a redirect paddock refuses"), "{shown}");
    assert!(
        shown.contains("plain http on a host that is not loopback"),
        "{shown}"
    );
    assert_nothing_installed(&project);
}
