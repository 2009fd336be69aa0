//! Plugins published to and installed from a real OCI registry on loopback (Debian's
//! `docker-registry`, the CNCF distribution registry), and from a URL with its SHA-256, through
//! the real binary. The registry is treated as hostile: tampered blobs, manifests of the wrong
//! shape, sizes past the cap, and redirects are all refused before anything compiles, and
//! leave nothing installed. Interoperability is checked with `skopeo` both ways; credentials
//! with the registry's htpasswd (docker configuration, credential helpers) and with a small
//! token-only registry written here (`--registry-token-env`). The registry binary and skopeo
//! come from `PADDOCK_OCI_REGISTRY` and `PADDOCK_SKOPEO` (`cargo xtask test` installs both).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use crate::agent_common::{Project, text};

pub(crate) fn tool(var: &str, default: &str) -> PathBuf {
    let path = std::env::var_os(var)
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from(default), PathBuf::from);
    assert!(
        path.is_file(),
        "{} is missing: install it with `apt-get install -y docker-registry skopeo` (`cargo xtask \
         test` does), or point {var} at it",
        path.display()
    );
    path
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub(crate) fn fs_wasm() -> (PathBuf, Vec<u8>) {
    let path = paddock_tests::plugins::plugin_dir().join("fs.wasm");
    let bytes = paddock_tests::plugins::plugin_bytes("fs.wasm");
    (path, bytes)
}

/// A registry on a free loopback port with its storage in a temporary directory; killed when
/// dropped.
pub(crate) struct Registry {
    child: Child,
    pub(crate) addr: String,
    storage: TempDir,
}

impl Registry {
    pub(crate) fn start() -> Registry {
        Registry::start_with(None)
    }

    /// With `htpasswd` (a line `user:bcrypt-hash`), the registry asks for HTTP basic auth.
    fn start_with(htpasswd: Option<&str>) -> Registry {
        let binary = tool("PADDOCK_OCI_REGISTRY", "/usr/bin/docker-registry");
        let storage = tempfile::tempdir().expect("registry storage");
        let auth = match htpasswd {
            Some(line) => {
                let file = storage.path().join("htpasswd");
                std::fs::write(&file, format!("{line}\n")).unwrap();
                format!(
                    "auth:\n  htpasswd:\n    realm: paddock-test\n    path: {}\n",
                    file.display()
                )
            }
            None => String::new(),
        };
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let addr = format!("127.0.0.1:{port}");
            let config = storage.path().join("config.yml");
            std::fs::write(
                &config,
                format!(
                    "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  \
                     delete:\n    enabled: true\nhttp:\n  addr: {addr}\n{auth}",
                    storage.path().join("data").display()
                ),
            )
            .unwrap();
            let mut child = Command::new(&binary)
                .arg("serve")
                .arg(&config)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start docker-registry");
            let deadline = Instant::now() + Duration::from_secs(15);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if matches!(http(&addr, "GET", "/v2/", &[], b"").0, 200 | 401) {
                    return Registry {
                        child,
                        addr,
                        storage,
                    };
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("docker-registry did not start on a loopback port");
    }

    pub(crate) fn blob_file(&self, digest_hex: &str) -> PathBuf {
        self.storage
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&digest_hex[..2])
            .join(digest_hex)
            .join("data")
    }

    pub(crate) fn oci(&self, repo_tag: &str) -> String {
        format!("oci://{}/{repo_tag}", self.addr)
    }

    /// Uploads a blob through the distribution API (monolithic); its digest.
    pub(crate) fn push_blob(&self, repo: &str, bytes: &[u8]) -> String {
        let digest = format!("sha256:{}", sha256_hex(bytes));
        let (status, headers, _) = http(
            &self.addr,
            "POST",
            &format!("/v2/{repo}/blobs/uploads/"),
            &[],
            b"",
        );
        assert_eq!(status, 202, "{headers}");
        let location = header(&headers, "location").expect("an upload location");
        let path = location
            .strip_prefix(&format!("http://{}", self.addr))
            .unwrap_or(&location);
        let sep = if path.contains('?') { '&' } else { '?' };
        let (status, headers, _) = http(
            &self.addr,
            "PUT",
            &format!("{path}{sep}digest={digest}"),
            &[("Content-Type", "application/octet-stream")],
            bytes,
        );
        assert_eq!(status, 201, "{headers}");
        digest
    }

    pub(crate) fn push_manifest(
        &self,
        repo: &str,
        tag: &str,
        media_type: &str,
        manifest: &[u8],
    ) -> u16 {
        http(
            &self.addr,
            "PUT",
            &format!("/v2/{repo}/manifests/{tag}"),
            &[("Content-Type", media_type)],
            manifest,
        )
        .0
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request over a fresh connection: status, header text, body.
pub(crate) fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    let Ok(mut stream) = TcpStream::connect(addr) else {
        return (0, String::new(), Vec::new());
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    if stream.write_all(request.as_bytes()).is_err() || stream.write_all(body).is_err() {
        return (0, String::new(), Vec::new());
    }
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(response.len());
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response.get(split + 4..).unwrap_or_default().to_vec();
    (status, head, body)
}

pub(crate) fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then(|| value.trim().to_string())
    })
}

/// paddock with no docker configuration (anonymous to registries), whatever this machine has.
pub(crate) fn run(project: &Project, args: &[&str]) -> Output {
    let none = project.home.path().join("no-docker-config");
    run_with(project, args, &[("DOCKER_CONFIG", none.to_str().unwrap())])
}

pub(crate) fn run_with(project: &Project, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = project.command(args);
    for (key, value) in env {
        cmd.env(key, value);
    }
    cmd.output().expect("run paddock")
}

/// `paddock plugin publish` of the built `fs` plugin to `reference`; the manifest digest.
pub(crate) fn publish_fs(project: &Project, reference: &str) -> String {
    let (path, _) = fs_wasm();
    let out = run(
        project,
        &[
            "plugin",
            "publish",
            path.to_str().unwrap(),
            reference,
            "--version",
            "1.0.0",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let digest = stdout
        .lines()
        .find_map(|l| l.strip_prefix("manifest "))
        .unwrap_or_else(|| panic!("publish prints the manifest digest: {stdout}"))
        .trim()
        .to_string();
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    digest
}

/// A preset loading installed plugin `name` with the current directory at /workspace.
fn preset_for(project: &Project, name: &str) -> String {
    let preset = project.dir.path().join(format!("{name}.toml"));
    std::fs::write(
        &preset,
        format!(
            "[plugins.{name}]\nsource = \"{name}\"\nmounts = [{{ host = \".\", guest = \"/workspace\", mode = \"ro\" }}]\n\
             [tools]\nenable = [\"read_file\"]\n[approval]\nlow = \"allow\"\n"
        ),
    )
    .unwrap();
    preset.to_str().unwrap().to_string()
}

/// The plugin `name` installed in `project` reads a file of the project: it was installed
/// whole and runs.
pub(crate) fn assert_reads_through(project: &Project, name: &str) {
    let json = read_through(project, name);
    assert!(
        json["content"]
            .as_str()
            .unwrap_or_default()
            .contains("hello from the registry"),
        "{json}"
    );
}

pub(crate) fn read_through(project: &Project, name: &str) -> Value {
    std::fs::write(
        project.dir.path().join("hello.txt"),
        "hello from the registry\n",
    )
    .unwrap();
    let preset = preset_for(project, name);
    let out = run(
        project,
        &[
            "tool",
            "call",
            "read_file",
            r#"{"path": "/workspace/hello.txt"}"#,
            "--preset",
            &preset,
            "--json",
        ],
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
}

/// Nothing of a refused install is left: no record, no blob, no download, no compiled code.
pub(crate) fn assert_nothing_installed(project: &Project) {
    let home = project.home.path();
    let list = run(project, &["plugin", "list"]);
    assert!(
        String::from_utf8_lossy(&list.stdout).contains("no plugins installed"),
        "{}",
        text(&list)
    );
    for dir in ["blobs", "downloads", "installed"] {
        let left: Vec<_> = std::fs::read_dir(home.join(dir))
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{dir}: {left:?}");
    }
    let compiled: Vec<_> = std::fs::read_dir(home.join("cache"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| n != "key"))
                .collect()
        })
        .unwrap_or_default();
    assert!(compiled.is_empty(), "compiled: {compiled:?}");
}

#[test]
fn a_published_plugin_installs_by_tag_and_by_digest_and_its_tools_answer() {
    let registry = Registry::start();
    let publisher = Project::new(&[]);
    let reference = registry.oci("plugins/fs:1.0");
    let digest = publish_fs(&publisher, &reference);
    let key = crate::plugin_oci_signing::KeyPair::new();
    key.sign(&publisher, &reference);

    let by_tag = Project::new(&[]);
    key.trust(&by_tag, "publisher");
    let out = run(
        &by_tag,
        &["plugin", "install", &reference, "--name", "ocifs"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("installed ocifs (tool plugin"), "{shown}");
    assert!(
        shown.contains(&digest),
        "the manifest digest is shown: {shown}"
    );
    assert!(
        out.stderr.is_empty(),
        "no progress when stderr is not a terminal: {}",
        text(&out)
    );
    assert_reads_through(&by_tag, "ocifs");

    let out = run(&by_tag, &["plugin", "inspect", "ocifs"]);
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("(manifest {digest}, layer sha256:")),
        "inspect shows where it came from: {}",
        text(&out)
    );

    // The record joins what a lock or a signature check will need.
    let record: Value = serde_json::from_slice(
        &std::fs::read(by_tag.home.path().join("installed/ocifs.json")).unwrap(),
    )
    .unwrap();
    let (_, bytes) = fs_wasm();
    let origin = &record["origin"];
    assert_eq!(origin["kind"], "oci", "{record}");
    assert_eq!(origin["manifest_digest"], digest.as_str(), "{record}");
    assert_eq!(
        origin["layer_digest"],
        format!("sha256:{}", sha256_hex(&bytes)).as_str(),
        "{record}"
    );
    assert_eq!(origin["registry"], registry.addr.as_str(), "{record}");
    assert_eq!(origin["tag"], "1.0", "{record}");
    assert_eq!(record["sha256"], sha256_hex(&bytes).as_str(), "{record}");

    // By digest, into another data dir, with the progress lines asked for.
    let by_digest = Project::new(&[]);
    key.trust(&by_digest, "publisher");
    let pinned = registry.oci(&format!("plugins/fs@{digest}"));
    let out = run(&by_digest, &["plugin", "install", &pinned, "--progress"]);
    assert!(out.status.success(), "{}", text(&out));
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(progress.contains("downloading"), "{progress}");
    assert!(progress.contains("compiling"), "{progress}");
    assert_reads_through(&by_digest, "fs");
}

#[test]
fn a_layer_changed_in_the_registry_is_refused_before_it_compiles_and_nothing_is_installed() {
    let registry = Registry::start();
    let publisher = Project::new(&[]);
    let reference = registry.oci("plugins/fs:1.0");
    publish_fs(&publisher, &reference);
    let (_, bytes) = fs_wasm();
    let expected = sha256_hex(&bytes);
    let blob = registry.blob_file(&expected);
    let mut tampered = std::fs::read(&blob).expect("the layer's blob in the registry's storage");
    assert_eq!(tampered, bytes);
    let middle = tampered.len() / 2;
    tampered[middle] ^= 0x01;
    std::fs::write(&blob, &tampered).unwrap();
    let actual = sha256_hex(&tampered);

    let project = Project::new(&[]);
    let out = run(
        &project,
        &[
            "plugin",
            "install",
            &reference,
            "--name",
            "ocifs",
            "--allow-unsigned",
        ],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let shown = text(&out);
    assert!(
        shown.contains(&expected),
        "names the expected digest: {shown}"
    );
    assert!(shown.contains(&actual), "names the actual digest: {shown}");
    assert!(shown.contains("nothing was installed"), "{shown}");
    assert_nothing_installed(&project);
}

#[test]
fn a_missing_tag_or_an_unreachable_registry_is_named_with_what_to_do() {
    let registry = Registry::start();
    let project = Project::new(&[]);
    let missing = registry.oci("plugins/fs:no-such-tag");
    let out = run(&project, &["plugin", "install", &missing]);
    assert!(!out.status.success());
    let shown = text(&out);
    assert!(shown.contains(&missing), "{shown}");
    let lower = shown.to_lowercase();
    assert!(
        lower.contains("unknown") || lower.contains("not found"),
        "the registry's answer: {shown}"
    );
    assert!(shown.contains("skopeo list-tags"), "how to fix it: {shown}");

    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gone = format!("oci://127.0.0.1:{closed}/plugins/fs:1.0");
    let out = run(&project, &["plugin", "install", &gone]);
    assert!(!out.status.success());
    let shown = text(&out);
    assert!(shown.contains(&gone), "{shown}");
    assert!(shown.contains("reachable"), "{shown}");
    assert_nothing_installed(&project);
}

#[test]
fn plain_http_names_without_a_registry_and_https_without_a_sha256_are_refused() {
    let project = Project::new(&[]);
    let sha = "0".repeat(64);
    for (args, expect) in [
        (
            vec!["http://example.com/fs.wasm", "--sha256", &sha],
            "plain http is allowed only to a loopback host",
        ),
        (
            vec!["http://10.0.0.1:8080/fs.wasm", "--sha256", &sha],
            "plain http is allowed only to a loopback host",
        ),
        (
            vec!["https://example.com/fs.wasm"],
            "give it with --sha256 HEX",
        ),
        (
            vec!["https://example.com/fs.wasm", "--sha256", "abc"],
            "is not a SHA-256",
        ),
        (
            vec!["https://user:pw@example.com/fs.wasm", "--sha256", &sha],
            "carries credentials",
        ),
        (vec!["oci://fs:1.0"], "names no registry"),
        (vec!["oci://library/fs:1.0"], "not a registry host"),
        (vec!["oci://ghcr.io/acme/fs"], "no tag or digest"),
        (vec!["ftp://example.com/fs.wasm"], "only oci://, https://"),
    ] {
        let mut all = vec!["plugin", "install"];
        all.extend(args.iter().copied());
        let out = run(&project, &all);
        assert!(!out.status.success(), "{all:?}");
        assert!(text(&out).contains(expect), "{all:?}: {}", text(&out));
    }
    let registry = Registry::start();
    let out = run(
        &project,
        &[
            "plugin",
            "install",
            &registry.oci("plugins/fs:1.0"),
            "--name",
            "../evil",
        ],
    );
    assert!(
        text(&out).contains("is not a valid plugin name"),
        "{}",
        text(&out)
    );
    assert_nothing_installed(&project);
}

/// A manifest for one config and the given layers (each: media type, digest, size).
pub(crate) fn wasm_manifest(
    config_digest: &str,
    config_size: usize,
    layers: &[(&str, &str, u64)],
) -> Vec<u8> {
    let layers: Vec<Value> = layers
        .iter()
        .map(|(media_type, digest, size)| {
            serde_json::json!({"mediaType": media_type, "digest": digest, "size": size})
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.wasm.config.v0+json",
            "digest": config_digest,
            "size": config_size,
        },
        "layers": layers,
    }))
    .unwrap()
}

#[test]
fn manifests_of_the_wrong_shape_or_size_are_refused_and_nothing_is_installed() {
    let registry = Registry::start();
    let (_, bytes) = fs_wasm();
    let repo = "hostile/fs";
    let layer = registry.push_blob(repo, &bytes);
    let config = br#"{"architecture":"wasm","os":"wasip2"}"#;
    let config_digest = registry.push_blob(repo, config);
    let size = bytes.len() as u64;
    let oci = "application/vnd.oci.image.manifest.v1+json";
    let cases: Vec<(&str, Vec<u8>, &str, String)> = vec![
        (
            "two-layers",
            wasm_manifest(
                &config_digest,
                config.len(),
                &[
                    ("application/wasm", &layer, size),
                    ("application/wasm", &layer, size),
                ],
            ),
            oci,
            "has 2 layers".into(),
        ),
        (
            "tarball",
            wasm_manifest(
                &config_digest,
                config.len(),
                &[("application/vnd.oci.image.layer.v1.tar+gzip", &layer, size)],
            ),
            oci,
            "not application/wasm".into(),
        ),
        (
            "huge",
            wasm_manifest(
                &config_digest,
                config.len(),
                &[("application/wasm", &layer, 1 << 40)],
            ),
            oci,
            format!("{} bytes, over the", 1u64 << 40),
        ),
        (
            "short",
            wasm_manifest(
                &config_digest,
                config.len(),
                &[("application/wasm", &layer, size - 100)],
            ),
            oci,
            "more than the".into(),
        ),
    ];
    // An image index over a good manifest, and a container image's config.
    let good = wasm_manifest(
        &config_digest,
        config.len(),
        &[("application/wasm", &layer, size)],
    );
    assert_eq!(registry.push_manifest(repo, "good", oci, &good), 201);
    let index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": oci, "digest": format!("sha256:{}", sha256_hex(&good)), "size": good.len()}],
    }))
    .unwrap();
    let image = String::from_utf8(good.clone())
        .unwrap()
        .replace(
            "application/vnd.wasm.config.v0+json",
            "application/vnd.oci.image.config.v1+json",
        )
        .into_bytes();
    let mut cases = cases;
    cases.push((
        "index",
        index,
        "application/vnd.oci.image.index.v1+json",
        "image index".into(),
    ));
    cases.push(("image", image, oci, "container image".into()));
    let project = Project::new(&[]);
    for (tag, body, media_type, expect) in &cases {
        let status = registry.push_manifest(repo, tag, media_type, body);
        assert_eq!(status, 201, "the registry takes manifest {tag}");
        let reference = registry.oci(&format!("{repo}:{tag}"));
        let out = run(
            &project,
            &[
                "plugin",
                "install",
                &reference,
                "--name",
                "x",
                "--allow-unsigned",
            ],
        );
        assert!(!out.status.success(), "{tag}: {}", text(&out));
        assert!(
            text(&out).contains(expect.as_str()),
            "{tag}: {}",
            text(&out)
        );
        assert!(text(&out).contains(&reference), "{tag}: {}", text(&out));
    }
    assert_nothing_installed(&project);
}

#[test]
fn skopeo_reads_what_paddock_publishes_and_paddock_installs_what_skopeo_copies() {
    let skopeo = tool("PADDOCK_SKOPEO", "/usr/bin/skopeo");
    let registry = Registry::start();
    let publisher = Project::new(&[]);
    let digest = publish_fs(&publisher, &registry.oci("plugins/fs:1.0"));
    let (path, bytes) = fs_wasm();

    let out = Command::new(&skopeo)
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!("docker://{}/plugins/fs:1.0", registry.addr))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(format!("sha256:{}", sha256_hex(&out.stdout)), digest);
    let manifest: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.wasm.config.v0+json"
    );
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "{manifest}");
    assert_eq!(layers[0]["mediaType"], "application/wasm");
    assert_eq!(
        layers[0]["digest"],
        format!("sha256:{}", sha256_hex(&bytes)).as_str()
    );
    let annotations = &manifest["annotations"];
    assert_eq!(
        annotations["org.opencontainers.image.version"], "1.0.0",
        "{manifest}"
    );
    assert_eq!(
        annotations["org.opencontainers.image.title"], "fs",
        "{manifest}"
    );
    assert!(
        annotations["org.opencontainers.image.created"].is_string(),
        "{manifest}"
    );

    // The config lists the component's imports and exports, as wkg writes it.
    let out = Command::new(&skopeo)
        .args(["inspect", "--raw", "--config", "--tls-verify=false"])
        .arg(format!("docker://{}/plugins/fs:1.0", registry.addr))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let config: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(config["architecture"], "wasm", "{config}");
    assert_eq!(config["os"], "wasip2", "{config}");
    assert_eq!(config["layerDigests"][0], layers[0]["digest"], "{config}");
    let exports: Vec<&str> = config["component"]["exports"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        exports
            .iter()
            .any(|e| e.starts_with("paddock:plugin/tools")),
        "{config}"
    );
    let imports = config["component"]["imports"].as_array().unwrap();
    assert!(
        imports.iter().any(|i| i
            .as_str()
            .unwrap_or_default()
            .starts_with("wasi:filesystem/types")),
        "{config}"
    );

    // The other way: an OCI layout written here, copied into the registry by skopeo.
    let layout = tempfile::tempdir().unwrap();
    let blobs = layout.path().join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let put = |data: &[u8]| {
        let hex = sha256_hex(data);
        std::fs::write(blobs.join(&hex), data).unwrap();
        format!("sha256:{hex}")
    };
    let layer = put(&std::fs::read(&path).unwrap());
    let config = br#"{"created":"2026-01-01T00:00:00Z","architecture":"wasm","os":"wasip2","layerDigests":[],"component":null}"#;
    let config_digest = put(config);
    let manifest = wasm_manifest(
        &config_digest,
        config.len(),
        &[("application/wasm", &layer, bytes.len() as u64)],
    );
    let manifest_digest = put(&manifest);
    std::fs::write(
        layout.path().join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    std::fs::write(
        layout.path().join("index.json"),
        serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest_digest,
                "size": manifest.len(),
                "annotations": {"org.opencontainers.image.ref.name": "2.0"},
            }],
        }))
        .unwrap(),
    )
    .unwrap();
    let out = Command::new(&skopeo)
        .args(["copy", "--dest-tls-verify=false"])
        .arg(format!("oci:{}:2.0", layout.path().display()))
        .arg(format!("docker://{}/other/fs-tool:2.0", registry.addr))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let project = Project::new(&[]);
    let out = run(
        &project,
        &[
            "plugin",
            "install",
            &registry.oci("other/fs-tool:2.0"),
            "--allow-unsigned",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("installed fs-tool"),
        "{}",
        text(&out)
    );
    assert_reads_through(&project, "fs-tool");
}

/// A loopback HTTP server: `/fs.wasm` the built plugin, `/away` a redirect to another host
/// over plain http, `/huge` a body announced past the cap.
fn file_server(bytes: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let bytes = bytes.clone();
            std::thread::spawn(move || serve_one(stream, &bytes));
        }
    });
    addr
}

fn serve_one(mut stream: TcpStream, bytes: &[u8]) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let line = String::from_utf8_lossy(&request);
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let head = match path.as_str() {
        "/fs.wasm" => format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            bytes.len()
        ),
        "/away" => "HTTP/1.1 302 Found\r\nLocation: http://example.com/fs.wasm\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
        "/huge" => format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            1u64 << 40
        ),
        _ => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
    };
    let _ = stream.write_all(head.as_bytes());
    if path == "/fs.wasm" {
        let _ = stream.write_all(bytes);
    }
}

#[test]
fn a_url_installs_only_with_the_sha256_it_was_given() {
    let (_, bytes) = fs_wasm();
    let right = sha256_hex(&bytes);
    let addr = file_server(bytes);
    let url = format!("http://{addr}/fs.wasm");

    let project = Project::new(&[]);
    let wrong = "ab".repeat(32);
    let out = run(&project, &["plugin", "install", &url, "--sha256", &wrong]);
    assert!(!out.status.success());
    let shown = text(&out);
    assert!(shown.contains(&wrong) && shown.contains(&right), "{shown}");
    for (path, expect) in [
        ("/away", "plain http is allowed only to a loopback host"),
        ("/huge", "over the"),
        ("/missing.wasm", "404"),
    ] {
        let other = format!("http://{addr}{path}");
        let out = run(
            &project,
            &[
                "plugin", "install", &other, "--sha256", &right, "--name", "x",
            ],
        );
        assert!(!out.status.success(), "{path}");
        assert!(text(&out).contains(expect), "{path}: {}", text(&out));
    }
    assert_nothing_installed(&project);

    let out = run(
        &project,
        &["plugin", "install", &url, "--sha256", &right.to_uppercase()],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_reads_through(&project, "fs");
    let record: Value = serde_json::from_slice(
        &std::fs::read(project.home.path().join("installed/fs.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["origin"]["kind"], "https", "{record}");
    assert_eq!(record["origin"]["sha256"], right.as_str(), "{record}");
}

/// `alice` / `s3cret-pw`, bcrypt at the lowest cost (a test fixture, fast to check).
const HTPASSWD: &str = "alice:$2b$04$Wuv2Vx45p4AfLn8FP4Ty9e2Y6wrZZIo6/eoPz2enFDtrGcBTJhA/y";

pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn registry_credentials_come_from_the_docker_configuration_and_its_helpers() {
    let registry = Registry::start_with(Some(HTPASSWD));
    let reference = registry.oci("private/fs:1.0");
    let (path, _) = fs_wasm();
    let wasm = path.to_str().unwrap();

    // Anonymous: refused, with how to log in.
    let publisher = Project::new(&[]);
    let project = Project::new(&[]);
    let out = run(&publisher, &["plugin", "publish", wasm, &reference]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("docker login 127.0.0.1"),
        "{}",
        text(&out)
    );

    // `auths` as `docker login` writes it.
    let config = tempfile::tempdir().unwrap();
    std::fs::write(
        config.path().join("config.json"),
        format!(
            r#"{{"auths": {{"{}": {{"auth": "{}"}}}}}}"#,
            registry.addr,
            base64(b"alice:s3cret-pw")
        ),
    )
    .unwrap();
    let docker_config = config.path().to_str().unwrap();
    let out = run_with(
        &publisher,
        &["plugin", "publish", wasm, &reference],
        &[("DOCKER_CONFIG", docker_config)],
    );
    assert!(out.status.success(), "{}", text(&out));

    let out = run(&project, &["plugin", "install", &reference]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("--registry-token-env"),
        "{}",
        text(&out)
    );
    assert_nothing_installed(&project);

    // A credential helper (`credHelpers`), run as docker runs it: `docker-credential-NAME get`.
    let helpers = tempfile::tempdir().unwrap();
    let helper = helpers.path().join("docker-credential-paddocktest");
    std::fs::write(
        &helper,
        "#!/bin/sh\nread server\nprintf '{\"ServerURL\":\"%s\",\"Username\":\"alice\",\"Secret\":\"s3cret-pw\"}' \"$server\"\n",
    )
    .unwrap();
    let mut mode = std::fs::metadata(&helper).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&helper, mode).unwrap();
    let with_helper = tempfile::tempdir().unwrap();
    std::fs::write(
        with_helper.path().join("config.json"),
        format!(
            r#"{{"credHelpers": {{"{}": "paddocktest"}}}}"#,
            registry.addr
        ),
    )
    .unwrap();
    let path_var = format!(
        "{}:{}",
        helpers.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = run_with(
        &project,
        &[
            "plugin",
            "install",
            &reference,
            "--name",
            "private_fs",
            "--allow-unsigned",
        ],
        &[
            ("DOCKER_CONFIG", with_helper.path().to_str().unwrap()),
            ("PATH", &path_var),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));

    // A token variable named but empty is refused before any request.
    let out = run_with(
        &project,
        &[
            "plugin",
            "install",
            &reference,
            "--registry-token-env",
            "PADDOCK_TEST_NO_SUCH_TOKEN",
        ],
        &[("PADDOCK_TEST_NO_SUCH_TOKEN", "")],
    );
    assert!(!out.status.success());
    assert!(
        text(&out).contains("PADDOCK_TEST_NO_SUCH_TOKEN is unset or empty"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_file_that_is_not_a_valid_component_is_not_published() {
    let registry = Registry::start();
    let project = Project::new(&[("notes.wasm", "not a component")]);
    let file = project.dir.path().join("notes.wasm");
    let out = run(
        &project,
        &[
            "plugin",
            "publish",
            file.to_str().unwrap(),
            &registry.oci("plugins/notes:1.0"),
        ],
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("nothing was published"),
        "{}",
        text(&out)
    );
    let (status, head, _) = http(
        &registry.addr,
        "GET",
        "/v2/plugins/notes/tags/list",
        &[],
        b"",
    );
    assert_eq!(status, 404, "the registry has nothing: {head}");
}

/// A registry of one artifact (`fake/fs:1.0`, the built `fs` plugin in the wasm layout) that
/// answers only requests carrying `Authorization: Bearer TOKEN`; the others get 401 and a
/// token service that refuses everyone.
fn token_registry(token: &'static str) -> String {
    let (_, wasm) = fs_wasm();
    let config = br#"{"architecture":"wasm","os":"wasip2"}"#.to_vec();
    let layer = format!("sha256:{}", sha256_hex(&wasm));
    let config_digest = format!("sha256:{}", sha256_hex(&config));
    let manifest = wasm_manifest(
        &config_digest,
        config.len(),
        &[("application/wasm", &layer, wasm.len() as u64)],
    );
    let manifest_digest = format!("sha256:{}", sha256_hex(&manifest));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let realm = format!("http://{addr}/token");
    let routes: Vec<(String, Vec<u8>, &str)> = vec![
        (
            "/v2/fake/fs/manifests/1.0".into(),
            manifest.clone(),
            "application/vnd.oci.image.manifest.v1+json",
        ),
        (
            format!("/v2/fake/fs/manifests/{manifest_digest}"),
            manifest,
            "application/vnd.oci.image.manifest.v1+json",
        ),
        (
            format!("/v2/fake/fs/blobs/{layer}"),
            wasm,
            "application/octet-stream",
        ),
        (
            format!("/v2/fake/fs/blobs/{config_digest}"),
            config,
            "application/octet-stream",
        ),
        ("/v2/".into(), b"{}".to_vec(), "application/json"),
    ];
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let head = String::from_utf8_lossy(&request).into_owned();
            let mut words = head.split_whitespace();
            let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
            let authorized =
                header(&head, "authorization").as_deref() == Some(&format!("Bearer {token}"));
            let route = routes.iter().find(|(p, ..)| p == path);
            let response = match route {
                Some((_, body, media_type)) if authorized => {
                    let digest = format!("sha256:{}", sha256_hex(body));
                    let mut out = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: {media_type}\r\nDocker-Content-Digest: {digest}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    if method != "HEAD" {
                        out.extend_from_slice(body);
                    }
                    out
                }
                _ if path.starts_with("/token") => {
                    b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
                }
                _ => format!(
                    "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"{realm}\",service=\"fake\"\r\nContent-Type: application/json\r\nContent-Length: 61\r\nConnection: close\r\n\r\n{{\"errors\":[{{\"code\":\"UNAUTHORIZED\",\"message\":\"authentication\"}}]}}"
                )
                .into_bytes(),
            };
            let _ = stream.write_all(&response);
        }
    });
    addr
}

#[test]
fn a_bearer_token_from_the_named_variable_is_what_the_registry_sees() {
    let addr = token_registry("t0ken-for-paddock");
    let reference = format!("oci://{addr}/fake/fs:1.0");
    let project = Project::new(&[]);

    let out = run(&project, &["plugin", "install", &reference]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("--registry-token-env"),
        "{}",
        text(&out)
    );

    let out = run_with(
        &project,
        &[
            "plugin",
            "install",
            &reference,
            "--registry-token-env",
            "FAKE_TOKEN",
        ],
        &[("FAKE_TOKEN", "wrong"), ("DOCKER_CONFIG", "/nonexistent")],
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Not authorized") && text(&out).contains("--registry-token-env"),
        "{}",
        text(&out)
    );
    assert_nothing_installed(&project);

    let out = run_with(
        &project,
        &[
            "plugin",
            "install",
            &reference,
            "--registry-token-env",
            "FAKE_TOKEN",
            "--allow-unsigned",
        ],
        &[
            ("FAKE_TOKEN", "t0ken-for-paddock"),
            ("DOCKER_CONFIG", "/nonexistent"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_reads_through(&project, "fs");
}
