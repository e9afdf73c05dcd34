#!/usr/bin/env python3
"""No two modules of the library import each other (docs/architecture.md: dependencies point one
way). Reads `crate::` and `super::` paths in src/ (outside comments and test modules), resolving
names that a parent module re-exports to the module that defines them, and lists every pair of
modules that name each other. Exits 1 when there is one.

    python3 .ci/module_cycles.py [src]
"""
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "src"
files = sorted(glob.glob(os.path.join(root, "**", "*.rs"), recursive=True))


def module_of(path):
    p = os.path.relpath(path, root)[:-3]
    if p.endswith("/mod") or p == "mod":
        p = p[: -len("/mod")] if p != "mod" else ""
    if p == "lib":
        p = ""
    return p.replace("/", "::")


modules = {module_of(f): f for f in files}

# (module, name) -> the child module a `use child::name` or `pub use child::{name}` takes it from.
reexported = {}
for f in files:
    m = module_of(f)
    text = open(f).read()
    for child, names in re.findall(r"(?:pub(?:\([\w:]+\))? )?use (\w+)::\{?([\w, ]+)\}?;", text):
        target = f"{m}::{child}" if m else child
        if target in modules:
            for n in names.split(","):
                if n.strip():
                    reexported[(m, n.strip())] = target

edges = {}
for f in files:
    m = module_of(f)
    text = re.sub(r"#\[cfg\(test\)\]\s*mod tests\s*\{.*", "", open(f).read(), flags=re.S)
    text = "\n".join(l for l in text.split("\n") if not l.strip().startswith("//"))
    parent = m.rsplit("::", 1)[0] if "::" in m else ""
    base = parent if not f.endswith("mod.rs") else (m.rsplit("::", 1)[0] if "::" in m else "")
    paths = [("crate", p) for p in re.findall(r"crate::([A-Za-z_0-9:]+)", text)]
    paths += [("super", p) for p in re.findall(r"super::([A-Za-z_0-9:]+)", text)]
    for group in re.findall(r"super::\{([^}]*)\}", text):
        paths += [("super", n.strip().split("::")[0]) for n in group.split(",") if n.strip()]
    for prefix, group in re.findall(r"crate::(\w+)::\{([^}]*)\}", text):
        paths += [("crate", prefix + "::" + n.strip().split("::")[0]) for n in group.split(",") if n.strip()]
    for kind, path in paths:
        parts = path.split("::")
        start = "" if kind == "crate" else (base + "::" if base else "")
        target = None
        for k in range(len(parts), 0, -1):
            candidate = start + "::".join(parts[:k])
            if candidate in modules:
                target = candidate
                if k < len(parts) and (candidate, parts[k]) in reexported:
                    target = reexported[(candidate, parts[k])]
                break
        if target is None and kind == "super" and (base, parts[0]) in reexported:
            target = reexported[(base, parts[0])]
        if target and target != m:
            edges.setdefault((m, target), path)

pairs = sorted((a, b) for (a, b) in edges if (b, a) in edges and a < b)
for a, b in pairs:
    print(f"{a} <-> {b}: `{edges[(a, b)]}` / `{edges[(b, a)]}`")
print(f"{len(modules)} modules, {len(edges)} imports, {len(pairs)} pairs that import each other")
sys.exit(1 if pairs else 0)
