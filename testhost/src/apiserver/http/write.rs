//! The writes template-cleanup sends besides DELETEs (its Events and OpenReports Reports): a
//! create, and a PATCH, merge (`application/merge-patch+json`) or server-side apply
//! (`application/apply-patch+yaml`, which creates a missing object and here replaces the fields
//! it names, as apply does for fields one manager owns), with kube-apiserver's answers.

use serde_json::{Value, json};

use super::{Front, Reply, Target, bad_request};
use crate::host::lock;

impl Front {
    /// POST to a collection: 201 and the object as held (at the path's apiVersion and kind), or
    /// 409 `AlreadyExists`.
    pub(super) fn create(&self, target: &Target, body: &str) -> Reply {
        let Ok(mut object) = serde_json::from_str::<Value>(body) else {
            return bad_request("the object is not JSON".into());
        };
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let target = Target {
            name,
            ..target.clone()
        };
        object["apiVersion"] = json!(target.api_version);
        object["kind"] = json!(target.kind);
        if let Some(namespace) = &target.namespace {
            object["metadata"]["namespace"] = json!(namespace);
        }
        let mut api = lock(&self.api);
        if api.held.contains_key(&target.key()) {
            let message = format!("{} \"{}\" already exists", target.resource(), target.name);
            return target.status(409, "AlreadyExists", message);
        }
        match api.hold(object) {
            Ok(()) => Reply(201, api.held[&target.key()].clone(), "created".into()),
            Err(e) => bad_request(e),
        }
    }

    /// PATCH of one object: the resourceVersion the patch names must be the object's (409
    /// `Conflict`); a patch that changes nothing writes nothing; a missing object is 404, unless
    /// the patch is an apply, which creates it.
    pub(super) fn patch(&self, target: &Target, content_type: &str, body: &str) -> Reply {
        let Ok(patch) = serde_json::from_str::<Value>(body) else {
            return bad_request("the patch is not JSON".into());
        };
        let apply = content_type.starts_with("application/apply-patch");
        let mut api = lock(&self.api);
        let Some(mut object) = api.held.get(&target.key()).cloned() else {
            drop(api);
            return if apply {
                self.create(target, body)
            } else {
                target.not_found()
            };
        };
        let have = object["metadata"]["resourceVersion"].clone();
        let want = &patch["metadata"]["resourceVersion"];
        if !want.is_null() && *want != have {
            let message = format!(
                "Operation cannot be fulfilled on {} \"{}\": the object has been modified; please apply your changes to the latest version and try again",
                target.resource(),
                target.name
            );
            return target.status(409, "Conflict", message);
        }
        let before = object.clone();
        // RFC 7386, as kube-apiserver applies application/merge-patch+json
        json_patch::merge(&mut object, &patch);
        if object != before {
            api.revision += 1;
            object["metadata"]["resourceVersion"] = json!(api.revision.to_string());
            api.held.insert(target.key(), object.clone());
        }
        Reply(200, object, "patched".into())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::front;
    use serde_json::{Value, json};

    #[test]
    fn creates_merges_and_applies_as_kube_apiserver_does() {
        let front = front(&[]);
        let events = "/apis/events.k8s.io/v1/namespaces/edge/events";
        let code = |url: &str, method, kind: &str, body: Value| {
            front.answer(method, url, ["", kind], &body.to_string()).0
        };
        let event = json!({"metadata": {"name": "e"}, "note": "n"});
        assert_eq!(code(events, "POST", "", event.clone()), 201);
        assert_eq!(code(events, "POST", "", event), 409);
        let (merge, apply) = (
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        );
        let e = &format!("{events}/e");
        let stale = json!({"metadata": {"resourceVersion": "1"}, "series": {"count": 2}});
        assert_eq!(code(e, "PATCH", merge, stale), 409);
        let reply = front.answer("PATCH", e, ["", merge], "{\"series\": {\"count\": 2}}");
        assert_eq!(
            (reply.0, &reply.1["series"]["count"], &reply.1["note"]),
            (200, &json!(2), &json!("n"))
        );
        assert_eq!(code(&format!("{events}/f"), "PATCH", merge, json!({})), 404);
        assert_eq!(
            code(
                &format!("{events}/f"),
                "PATCH",
                apply,
                json!({"metadata": {"name": "f"}})
            ),
            201
        );
    }
}
