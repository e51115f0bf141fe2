"""A Flux Kustomization built as Flux's kustomize-controller builds it, small, for scripts/sylva-render.py.

Flux's binaries are not used; each rule is written from the code of the versions Sylva fd968edc
runs (Flux 2.5.1: kustomize-controller v1.5.1, which takes github.com/fluxcd/pkg/kustomize
v1.16.0, github.com/fluxcd/pkg/envsubst v1.3.0 and github.com/fluxcd/pkg/runtime v0.54.0; its
go.mod). Citations are path@version in those repositories.

Build (kustomize-controller internal/controller/kustomization_controller.go@v1.5.1, build()):
  1. The source is copied and the Kustomization's spec is written into the kustomization.yaml at
     spec.path (pkg kustomize/kustomize_generator.go@kustomize/v1.16.0, Generator.WriteFile):
     targetNamespace becomes `namespace`, namePrefix/nameSuffix, spec.patches are appended to the
     file's `patches`, spec.components to its `components` (each must be a local relative path),
     spec.images replace or add `images` entries. A path without a kustomization.yaml gets one
     generated from its manifests; none of this project's units has such a path, so that case is
     refused here rather than imitated.
  2. kustomize builds it with LoadRestrictionsNone and the builtin plugins only (the same file,
     Build()); here `kubectl kustomize --load-restrictor LoadRestrictionsNone` (kubectl bundles
     kustomize v5.5.0; kustomize-controller v1.5.1 bundles kustomize/api v0.19.0, v5.6.0).
  3. When spec.postBuild is set, each object is substituted on its own
     (pkg kustomize/kustomize_varsub.go@kustomize/v1.16.0, SubstituteVariables):
     - an object labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled` is left
       as it is, whole;
     - the variables are substituteFrom's ConfigMaps and Secrets in order (a missing one is an
       error unless `optional: true`), then postBuild.substitute over them; newlines are removed
       from every value; each name must match ^[_[:alpha:]][_[:alpha:][:digit:]]*$;
     - with no variable at all, nothing is substituted;
     - the object is written as YAML, substituted as text, and read back as YAML, so a value that
       becomes `true` or `123` is a boolean or a number (the "numbers and booleans" section of
       docs/spec/v1/kustomizations.md@v1.5.1).
  4. Substitution is envsubst (pkg envsubst/parse/scan.go, parse.go, template.go, funcs.go
     @envsubst/v1.3.0): `${var}`; `${var:=default}`, `${var:-default}`, `${var=default}` and
     `${var-default}` all give the default when the value is empty or unset (toDefault); `$$`
     before a character drops one `$`, so `$${var}` is the text `${var}`; `$var` without braces is
     text. Strict mode (the StrictPostBuildSubstitutions feature gate,
     internal/features/features.go@v1.5.1, off by default and not set by Sylva fd968edc:
     charts/sylva-units/values.yaml `flux.kustomize.features_gates: {}`) fails on `${var}` with no
     default when var is unset; otherwise it becomes the empty string. The string functions
     (`${#var}`, `${var/a/b}`, case and substring) are refused here: no unit of ours uses them.

Health (pkg runtime/cel/status_evaluator.go@runtime/v0.54.0, Evaluate): with healthCheckExprs for
an object's apiVersion and kind, the object is InProgress while status.observedGeneration differs
from metadata.generation; otherwise inProgress, failed, then current are evaluated in that order
(CEL, the object's top-level fields as variables: runtime/cel/expression.go, NewExpression without
declared variables) and the first true one decides; none true is InProgress.

Drift detection's ignore rules (helm-controller v1.2.0, the one Flux 2.5 ships; its api/v2/
helmrelease_types.go, IgnoreRule: "Paths is a list of JSON Pointer (RFC 6901) paths"): each
rule's paths are removed from the live and the dry-run object before they are compared
(helm-controller internal/action/diff.go@v1.2.0 passes them to github.com/fluxcd/pkg/ssa v0.45.1,
whose jsondiff/unstructured.go@ssa/v0.45.1 applies GenerateRemovePatch's `remove` operations,
jsondiff/patch.go, ApplyPatchToUnstructured, with AllowMissingPathOnRemove). The patch is applied
by github.com/evanphx/json-patch/v5 v5.9.11 (v5/patch.go, findObject and Patch.remove): the path is
split on `/`, `~1` and `~0` decoded in each part, an array is entered by an index only; a path
that names nothing is skipped without an error. So `/webhooks[0]/clientConfig/caBundle` looks for
a key `webhooks[0]`, finds none, and ignores nothing; `/webhooks/0/clientConfig/caBundle` is the
first webhook's caBundle.
"""

import copy
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml

SUBSTITUTE_KEY = "kustomize.toolkit.fluxcd.io/substitute"
VAR_NAME = re.compile(r"^[_A-Za-z][_A-Za-z0-9]*$")
IDENT = re.compile(r"[A-Za-z0-9_]")
DEFAULT_OPS = (":=", ":-", "=", "-")


class SubstitutionError(Exception):
    pass


def envsubst(text, variables, strict):
    """fluxcd/pkg envsubst@v1.3.0 Eval with Flux's mapping (kustomize_varsub.go, varSubstitution)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "$" and i + 1 < n and text[i + 1] == "$":
            # scanEscaped: `$$` drops the first `$`; the second is then read as it comes.
            out.append("$")
            i += 2
            if i < n and text[i] == "{":
                # `$${` : the `{` is text, and so is what follows up to the next `$`.
                out.append("{")
                i += 1
            continue
        if c == "$" and i + 1 < n and text[i + 1] == "{":
            end = text.find("}", i + 2)
            if end < 0:
                raise SubstitutionError("missing closing brace")
            body = text[i + 2:end]
            j = 0
            while j < len(body) and IDENT.match(body[j]):
                j += 1
            name, rest = body[:j], body[j:]
            if not name:
                raise SubstitutionError(f"unable to parse variable name in ${{{body}}}")
            default = None
            if rest:
                op = next((o for o in DEFAULT_OPS if rest.startswith(o)), None)
                if op is None:
                    raise SubstitutionError(
                        f"${{{body}}}: only ${{var}} and its default forms are written here")
                default = rest[len(op):]
                if "${" in default:
                    raise SubstitutionError(f"${{{body}}}: nested substitution not written here")
            if name in variables:
                value = variables[name]
            elif strict and default is None:
                raise SubstitutionError(f'variable not set (strict mode): "{name}"')
            else:
                value = ""
            if default is not None and value == "":
                value = default
            out.append(value)
            i = end + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def load_variables(spec, substitute_from):
    """LoadVariables, then the in-line substitute over them. substitute_from maps (kind, name) to
    the data the cluster would hold; a reference it lacks is missing."""
    variables = {}
    post = spec.get("postBuild") or {}
    for ref in post.get("substituteFrom") or []:
        data = substitute_from.get((ref.get("kind"), ref.get("name")))
        if data is None:
            if ref.get("optional"):
                continue
            raise SubstitutionError(f"substitute from '{ref.get('kind')}/{ref.get('name')}' error: not found")
        for k, v in data.items():
            variables[k] = str(v).replace("\n", "")
    for k, v in (post.get("substitute") or {}).items():
        variables[k] = str(v).replace("\n", "")
    for k in variables:
        if not VAR_NAME.match(k):
            raise SubstitutionError(f"'{k}' var name is invalid")
    return variables


def substitution_disabled(obj):
    meta = obj.get("metadata") or {}
    return ((meta.get("labels") or {}).get(SUBSTITUTE_KEY) == "disabled"
            or (meta.get("annotations") or {}).get(SUBSTITUTE_KEY) == "disabled")


def substitute(obj, variables, strict):
    """SubstituteVariables for one object: None when it is left alone."""
    if substitution_disabled(obj):
        return None
    if not variables:
        return obj
    text = yaml.safe_dump(obj, default_flow_style=False, sort_keys=False, width=1 << 20)
    return yaml.safe_load(envsubst(text, variables, strict))


def write_kustomization(unit_dir, spec):
    """Generator.WriteFile: the Kustomization's spec written into unit_dir/kustomization.yaml."""
    kfile = next((unit_dir / n for n in ("kustomization.yaml", "kustomization.yml", "Kustomization")
                  if (unit_dir / n).is_file()), None)
    if kfile is None:
        raise SubstitutionError(f"{unit_dir}: no kustomization.yaml (Flux would generate one)")
    kus = yaml.safe_load(kfile.read_text(encoding="utf-8")) or {}
    if spec.get("targetNamespace"):
        kus["namespace"] = spec["targetNamespace"]
    for field in ("namePrefix", "nameSuffix"):
        if spec.get(field):
            kus[field] = spec[field]
    for patch in spec.get("patches") or []:
        kus.setdefault("patches", []).append(copy.deepcopy(patch))
    for component in spec.get("components") or []:
        if component.startswith("/") or "://" in component:
            raise SubstitutionError(f"component path '{component}' must be local and relative")
        kus.setdefault("components", []).append(component)
    for image in spec.get("images") or []:
        images = kus.setdefault("images", [])
        new = {k: image[k] for k in ("name", "newName", "newTag", "digest") if k in image}
        for idx, old in enumerate(images):
            if old.get("name") == image["name"]:
                images[idx] = new
                break
        else:
            images.append(new)
    for unsupported in ("patchesStrategicMerge", "patchesJson6902"):
        if spec.get(unsupported):
            raise SubstitutionError(f"spec.{unsupported} is not written here")
    kfile.write_text(yaml.safe_dump(kus, sort_keys=False), encoding="utf-8")


def copy_source(root, dest):
    """The source artifact: the repository's files, without its build output and git data."""
    shutil.copytree(root, dest, symlinks=True,
                    ignore=shutil.ignore_patterns(".git", "target", "node_modules", "__pycache__"))


def build(source, spec, substitute_from=None, strict=False):
    """The objects Flux would apply for a Kustomization spec whose source is the directory
    `source` (a copy is changed, not it)."""
    with tempfile.TemporaryDirectory(prefix="flux-build-") as tmp:
        root = Path(tmp) / "source"
        copy_source(source, root)
        unit_dir = (root / spec["path"]).resolve()
        if root.resolve() not in unit_dir.parents and unit_dir != root.resolve():
            raise SubstitutionError(f"path {spec['path']} leaves the source")
        write_kustomization(unit_dir, spec)
        run = subprocess.run(
            ["kubectl", "kustomize", "--load-restrictor", "LoadRestrictionsNone", str(unit_dir)],
            capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise SubstitutionError(f"kustomize build failed: {run.stderr.strip()}")
        objects = [o for o in yaml.safe_load_all(run.stdout) if o]
    if spec.get("postBuild") is None:
        return objects
    variables = load_variables(spec, substitute_from or {})
    out = []
    for obj in objects:
        try:
            done = substitute(obj, variables, strict)
        except SubstitutionError as error:
            name = (obj.get("metadata") or {}).get("name")
            raise SubstitutionError(f"post build failed for '{name}': envsubst error: {error}") from error
        out.append(obj if done is None else done)
    return out


def health(obj, exprs, evaluate):
    """Evaluate (status_evaluator.go) for one object: 'Current', 'Failed', 'InProgress', or None
    when no expression covers its apiVersion and kind (kstatus then decides)."""
    match = [e for e in exprs or [] if e.get("apiVersion") == obj.get("apiVersion")
             and e.get("kind") == obj.get("kind")]
    if not match:
        return None
    exprs = match[0]
    status = obj.get("status") or {}
    if "observedGeneration" in status:
        generation = (obj.get("metadata") or {}).get("generation")
        if generation is not None and generation != status["observedGeneration"]:
            return "InProgress"
    for key, result in (("inProgress", "InProgress"), ("failed", "Failed"), ("current", "Current")):
        if exprs.get(key) and evaluate(exprs[key], obj):
            return result
    return "InProgress"


def cel_evaluator():
    """CEL through cel-python (celpy): each top-level field of the object is a variable, as
    runtime/cel/expression.go@runtime/v0.54.0 passes UnstructuredContent() as the activation.
    An evaluation error is not `true`: Flux then reports the object's status as unknown, which
    does not make it Current either (cel-go fails on `status` when the object has none, where
    celpy's has() gives false; neither is Current).

    A real CEL implementation rather than a few lines matching today's one comparison: whatever
    a maintainer writes in healthCheckExprs later (Flux's own examples use filter() and all()
    over status.conditions) is then evaluated, not approximated, and an expression celpy cannot
    parse fails the check."""
    import celpy  # installed by the Makefile under target/tools/sylva-check

    env = celpy.Environment()
    programs = {}

    def evaluate(expr, obj):
        if expr not in programs:
            programs[expr] = env.program(env.compile(expr))
        activation = {k: celpy.json_to_cel(v) for k, v in obj.items()}
        try:
            result = programs[expr].evaluate(activation)
        except celpy.CELEvalError:
            return False
        if isinstance(result, celpy.CELEvalError):
            return False
        if not isinstance(result, celpy.celtypes.BoolType):
            raise SubstitutionError(f"CEL expression does not give a boolean: {expr}")
        return bool(result)

    return evaluate


def ignored_by(obj, path):
    """Whether a drift-detection ignore path removes something from obj (see the docstring above):
    False where helm-controller would skip it silently."""
    if path == "":
        return True  # the whole object (ssa jsondiff IgnorePathRoot)
    if not path.startswith("/"):
        return False
    node = obj
    parts = [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]
    for part in parts:
        if isinstance(node, dict):
            if part not in node:
                return False
            node = node[part]
        elif isinstance(node, list):
            if not re.fullmatch(r"-?[0-9]+", part):
                return False
            index = int(part)
            index = index + len(node) if index < 0 else index  # SupportNegativeIndices
            if not 0 <= index < len(node):
                return False
            node = node[index]
        else:
            return False
    return True
