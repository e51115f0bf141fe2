//! The client exactly as a pass builds it ([`crate::api::client`] over kube's own stack from a
//! `Config`), against a small HTTP server on a local port: what reaches the server is what would
//! reach the API server. The other tests build their client over a mock service, below kube's
//! stack, so they cannot see a layer `ClientBuilder::try_from` adds.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use template_cleanup_core::ServedKind;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::api::{CallError, Cluster, client};

/// How the server answers the `n`th request (from 0) of a method: a status code.
type Answers = fn(method: &str, n: usize) -> u16;

/// Serves HTTP/1.1 on a local port, answering each request by `answers` with a `Status` body
/// (or `{}` on 200); returns the server's URL and the requests it got, as `METHOD path`.
async fn serve(answers: Answers) -> (http::Uri, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a local port");
    let url = format!("http://{}", listener.local_addr().expect("its address"))
        .parse()
        .expect("a URL");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(connection(stream, answers, log.clone()));
        }
    });
    (url, seen)
}

/// One connection: its requests, one after another (keep-alive).
async fn connection(mut stream: TcpStream, answers: Answers, seen: Arc<Mutex<Vec<String>>>) {
    let mut buffer = Vec::new();
    loop {
        let Some(end) = read_head(&mut stream, &mut buffer).await else {
            return;
        };
        let head = String::from_utf8_lossy(&buffer[..end]).to_string();
        let length = head
            .lines()
            .filter_map(|line| line.split_once(':'))
            .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, value)| value.trim().parse::<usize>().ok())
            .unwrap_or(0);
        while buffer.len() < end + 4 + length {
            let mut chunk = [0; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        buffer.drain(..end + 4 + length);
        let mut words = head.split(' ');
        let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        let n = {
            let mut seen = seen.lock().expect("the log");
            let n = seen
                .iter()
                .filter(|s| s.starts_with(&format!("{method} ")))
                .count();
            seen.push(format!("{method} {path}"));
            n
        };
        let code = answers(method, n);
        let body = if code == 200 {
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a", "namespace": "edge"}})
        } else {
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                   "reason": "ServiceUnavailable", "message": "try later"})
        }
        .to_string();
        let answer = format!(
            "HTTP/1.1 {code} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if stream.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Reads until `buffer` holds a whole request head; where it ends (`None`: the connection
/// closed).
async fn read_head(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<usize> {
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some(end);
        }
        let mut chunk = [0; 4096];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The pass's cluster over [`client`], against the server at `url`.
fn cluster(url: http::Uri) -> Cluster {
    let timeout = Duration::from_secs(5);
    let client = client(kube::Config::new(url), timeout).expect("a client for a local URL");
    Cluster::new(client, timeout)
}

fn metal3_machine_templates() -> ServedKind {
    ServedKind {
        group: "infrastructure.cluster.x-k8s.io".into(),
        version: "v1beta1".into(),
        kind: "Metal3MachineTemplate".into(),
        plural: "metal3machinetemplates".into(),
    }
}

/// A DELETE answered 503 is sent once, and its answer is the verdict. kube's default retry layer
/// (on while `Config::default_retry` is) would send it again up to 15 times.
#[tokio::test]
async fn a_delete_answered_503_is_sent_once() {
    let (url, seen) = serve(|_, _| 503).await;
    let cluster = cluster(url);
    let answer = tokio::time::timeout(
        Duration::from_secs(5),
        cluster.probe_delete(&metal3_machine_templates(), "edge", "old", "uid-1"),
    )
    .await;
    let seen = seen.lock().expect("the log").clone();
    let deletes = seen.iter().filter(|s| s.starts_with("DELETE ")).count();
    assert_eq!(deletes, 1, "DELETEs sent: {seen:?}");
    match answer {
        Ok(Err(CallError::Status(refused))) => assert_eq!(refused.code, 503),
        other => panic!("expected the 503 as the answer, got {other:?}"),
    }
}

/// A GET answered 503 is still retried, by the client's own read policy.
#[tokio::test]
async fn a_get_answered_503_is_retried() {
    let (url, seen) = serve(|_, n| if n == 0 { 503 } else { 200 }).await;
    let cluster = cluster(url);
    let answer =
        tokio::time::timeout(Duration::from_secs(20), cluster.get_secret("edge", "a")).await;
    let seen = seen.lock().expect("the log").clone();
    assert_eq!(
        seen,
        vec![
            "GET /api/v1/namespaces/edge/secrets/a".to_string(),
            "GET /api/v1/namespaces/edge/secrets/a".to_string()
        ]
    );
    assert!(
        matches!(answer, Ok(Ok(Some(_)))),
        "the second answer: {answer:?}"
    );
}
