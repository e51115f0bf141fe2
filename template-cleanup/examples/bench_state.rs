//! The state `make bench-cleanup` serves through `testhost apiserver --state`: the objects of
//! GUARD_JSON first (tests/bench.sh gives the clean-up's guard, active, and its webhook, as
//! testhost/kubewarden.jq writes them for every end-to-end script), then
//! N labelled KubeadmConfigTemplates of about 48 KiB in namespace `edge` (created in 2020, one
//! used by a MachineDeployment), 5,000 Helm release Secrets in `edge` (500 releases of 10
//! revisions, Helm's base64 of the release JSON; release site-XXX declares tmpl-00XXX), and the
//! hostile current releases of issue 41, each in its own namespace with one labelled template: a
//! YAML alias bomb, a gzipped flow list of 15,000,000 items, and a gzip bomb of 1 GiB of zeros.
//!
//! Usage: `bench_state GUARD_JSON N OUT_JSON`, GUARD_JSON a JSON array of objects. Writes the
//! state as a JSON array, one object at a time, so that its own memory stays small.

use std::fs::File;
use std::io::{BufWriter, Write};

use base64::Engine;
use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::{Value, json};
use template_cleanup_core::{CLEANUP_LABEL, CLEANUP_VALUE};

const BOOTSTRAP: &str = "bootstrap.cluster.x-k8s.io/v1beta1";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn gzip(parts: &mut dyn FnMut(&mut GzEncoder<Vec<u8>>) -> std::io::Result<()>) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    parts(&mut encoder)
        .and_then(|()| encoder.finish())
        .unwrap_or_else(|e| panic!("gzip: {e}"))
}

fn secret(namespace: &str, release: &str, version: u32, status: &str, data: &[u8]) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
        "metadata": {"name": format!("sh.helm.release.v1.{release}.v{version}"), "namespace": namespace,
                     "labels": {"owner": "helm", "name": release, "version": version.to_string(), "status": status}},
        "data": {"release": b64(data)}})
}

fn template(namespace: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": BOOTSTRAP, "kind": "KubeadmConfigTemplate",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": "2020-01-01T00:00:00Z",
                     "labels": {CLEANUP_LABEL: CLEANUP_VALUE, "app.kubernetes.io/part-of": "edge-fleet"}},
        "spec": spec})
}

/// A current release of `namespace` whose body is `body` (already Helm's encoding: base64 of
/// JSON, or base64 of gzip of JSON), and the one labelled template it would leave.
fn hostile(out: &mut dyn FnMut(&Value), namespace: &str, body: &[u8]) {
    out(&secret(namespace, "bomb", 1, "deployed", body));
    out(&template(
        namespace,
        "free",
        json!({"template": {"spec": {}}}),
    ));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, guard_path, count, path] = args.as_slice() else {
        eprintln!("usage: bench_state GUARD_JSON N OUT_JSON");
        std::process::exit(2);
    };
    let count: usize = count.parse().unwrap_or_else(|e| panic!("N: {e}"));
    let guard: Value = serde_json::from_str(
        &std::fs::read_to_string(guard_path).unwrap_or_else(|e| panic!("{guard_path}: {e}")),
    )
    .unwrap_or_else(|e| panic!("{guard_path}: {e}"));
    let file = File::create(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut writer = BufWriter::new(file);
    let mut first = true;
    let mut out = |object: &Value| {
        let sep = if first { "[\n" } else { ",\n" };
        first = false;
        writer
            .write_all(sep.as_bytes())
            .and_then(|()| serde_json::to_writer(&mut writer, object).map_err(Into::into))
            .unwrap_or_else(|e| panic!("{path}: {e}"));
    };

    for object in guard
        .as_array()
        .unwrap_or_else(|| panic!("{guard_path}: not a JSON array"))
    {
        out(object);
    }
    out(
        &json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
        "metadata": {"name": "edge-a", "namespace": "edge"}, "spec": {}}),
    );
    out(
        &json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
        "metadata": {"name": "edge-a-md", "namespace": "edge"},
        "spec": {"clusterName": "edge-a", "template": {"spec": {"clusterName": "edge-a",
            "bootstrap": {"configRef": {"apiVersion": BOOTSTRAP, "kind": "KubeadmConfigTemplate", "name": "tmpl-00000"}}}}}}),
    );

    // A cloud-init payload padding each template to about 48 KiB.
    let line =
        "# cloud-init payload line, padding the template to a realistic 48 KiB size ..........\n";
    let content: String = line.repeat(48 * 1024 / line.len() + 1)[..48 * 1024 - 600].to_string();
    for i in 0..count {
        out(&template(
            "edge",
            &format!("tmpl-{i:05}"),
            json!({"template": {"spec": {
            "files": [{"path": "/etc/bench/payload.sh", "permissions": "0644", "content": content}],
            "preKubeadmCommands": ["echo bench"]}}}),
        ));
    }
    for r in 0..500 {
        let release = format!("site-{r:03}");
        for v in 1..=10u32 {
            let body = json!({"name": release, "namespace": "edge", "version": v, "info": {"status": "deployed"},
                "chart": {"files": (0..300).map(|k| format!("chart file line {k} of {release}")).collect::<Vec<_>>()},
                "manifest": format!("apiVersion: {BOOTSTRAP}\nkind: KubeadmConfigTemplate\nmetadata:\n  name: tmpl-{r:05}\n")});
            let status = if v == 10 { "deployed" } else { "superseded" };
            out(&secret(
                "edge",
                &release,
                v,
                status,
                b64(body.to_string().as_bytes()).as_bytes(),
            ));
        }
    }

    // A YAML alias bomb of about 1.2 KB: nine levels of nine aliases.
    let mut bomb = String::from(
        "a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for k in 1..10 {
        bomb += &format!(
            "a{k}: &a{k} [{}]\n",
            vec![format!("*a{}", k - 1); 9].join(",")
        );
    }
    let release = json!({"name": "bomb", "namespace": "hostile-alias", "version": 1, "info": {"status": "deployed"}, "manifest": bomb});
    hostile(
        &mut out,
        "hostile-alias",
        b64(release.to_string().as_bytes()).as_bytes(),
    );
    // One flow list of 15,000,000 items, gzipped as Helm stores a release.
    let flow = format!("[{}]\n", vec!["0"; 15_000_000].join(","));
    let release = json!({"name": "bomb", "namespace": "hostile-flow", "version": 1, "info": {"status": "deployed"}, "manifest": flow});
    let gz = gzip(&mut |g| g.write_all(release.to_string().as_bytes()));
    hostile(&mut out, "hostile-flow", b64(&gz).as_bytes());
    // A gzip bomb: 1 GiB of zeros after the start of a release's JSON.
    let gz = gzip(&mut |g| {
        g.write_all(br#"{"name":"bomb","namespace":"hostile-gzip","version":1,"info":{"status":"deployed"},"manifest":"kind: KubeadmConfigTemplate "#)?;
        let zeros = vec![b'0'; 1 << 20];
        for _ in 0..1024 {
            g.write_all(&zeros)?;
        }
        g.write_all(br#""}"#)
    });
    hostile(&mut out, "hostile-gzip", b64(&gz).as_bytes());

    writer
        .write_all(b"\n]\n")
        .and_then(|()| writer.flush())
        .unwrap_or_else(|e| panic!("{path}: {e}"));
}
