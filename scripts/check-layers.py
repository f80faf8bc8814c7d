#!/usr/bin/env python3
"""Checks the layer rule of the tree (README's Layout): each folder includes only the layers it may use.

    scripts/check-layers.py [ROOT]

Reads every quoted #include of the C++ files under src/ and tools/lctx/ (angle-bracket includes are system
and third-party headers) and, for the generating commands (lctx run/infill, chat, embed, perplexity and
serve), follows the tool's own headers transitively. Prints each include that breaks a rule, as
"FILE:LINE: includes HEADER (RULE)", and exits 1 when there is one; else one line saying what was checked.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# The engine's layers, bottom up; a layer may include its own folder and those before it. vocab/unicode.h
# (UTF-8 decoding, no tokenizer state) also serves the grammar library.
ENGINE = ["util", "tensor", "gguf", "kernels", "vocab", "model", "context", "grammar", "chat", "sampling",
          "quantize", "capi"]
# The text libraries the front ends and the generation layer share: no engine internals.
TEXT_LIBS = {"grammar": ["grammar/", "vocab/unicode.h"], "chat": ["chat/", "grammar/", "vocab/unicode.h"]}
# Above the engine: llama.h, lctx_ext.h, the text libraries and the generation layer.
PUBLIC = ["llama.h", "lctx/"]
RULES = {
    "generate": PUBLIC + ["generate/", "chat/", "grammar/"],
    "server": PUBLIC + ["generate/", "chat/", "grammar/", "server/"],
}
# The commands that generate reach the engine only through the public headers and src/generate/ (the
# tool's own files they include are followed); serve also through src/server/.
COMMANDS = {
    "tools/lctx/cmd_run.cpp": [],
    "tools/lctx/cmd_chat.cpp": [],
    "tools/lctx/cmd_embed.cpp": [],
    "tools/lctx/cmd_perplexity.cpp": [],
    "tools/lctx/cmd_serve.cpp": ["server/"],
}
COMMAND_ALLOWED = PUBLIC + ["generate/", "chat/", "grammar/", "tools/lctx/"]


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for m in INCLUDE.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, m.group(1)


def allowed(header, prefixes):
    return any(header == p or (p.endswith("/") and header.startswith(p)) for p in prefixes)


def engine_rule(layer):
    if layer in TEXT_LIBS:
        return TEXT_LIBS[layer]
    below = ENGINE[: ENGINE.index(layer) + 1]
    return [b + "/" for b in below] + (["llama.h", "lctx/"] if layer == "capi" else [])


def resolve(root, header, including):
    for base in (os.path.dirname(including), root, os.path.join(root, "src"), os.path.join(root, "include")):
        p = os.path.normpath(os.path.join(base, header))
        if os.path.isfile(p):
            return p
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    problems = []
    files = 0
    src = os.path.join(root, "src")
    for layer in sorted(os.listdir(src)):
        folder = os.path.join(src, layer)
        if not os.path.isdir(folder):
            continue
        rule = RULES.get(layer) or (engine_rule(layer) if layer in ENGINE else None)
        if rule is None:
            problems.append(f"src/{layer}/: a folder the layer rule does not know (add it to scripts/check-layers.py)")
            continue
        for dirpath, _, names in os.walk(folder):
            for n in sorted(names):
                if not n.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(dirpath, n)
                files += 1
                for line, h in includes(path):
                    # A header beside the file, named without its folder, is the file's own layer.
                    if "/" not in h and os.path.isfile(os.path.join(dirpath, h)) and h != "llama.h":
                        continue
                    if not allowed(h, rule):
                        problems.append(f"{os.path.relpath(path, root)}:{line}: includes {h} (src/{layer}/ may "
                                        f"include {', '.join(rule)})")
    for cmd, extra in COMMANDS.items():
        start = os.path.join(root, cmd)
        if not os.path.isfile(start):
            problems.append(f"{cmd}: missing (scripts/check-layers.py names it)")
            continue
        rule = COMMAND_ALLOWED + extra
        seen, todo = set(), [start]
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            rel = os.path.relpath(path, root)
            for line, h in includes(path):
                target = resolve(root, h, path)
                name = os.path.relpath(target, root) if target else h
                if name.startswith("src/"):
                    name = name[4:]
                elif name.startswith("include/"):
                    name = name[8:]
                if not allowed(name, rule):
                    problems.append(f"{rel}:{line}: includes {h} ({cmd} reaches the engine only through "
                                    f"{', '.join(rule)})")
                elif target and name.startswith("tools/lctx/"):
                    todo.append(target)
        files += 1
    for p in problems:
        print(p)
    if problems:
        print(f"check-layers: {len(problems)} include(s) break the layer rule (README, Layout)")
        return 1
    print(f"check-layers: {files} files and the generating commands' includes keep the layer rule")
    return 0


if __name__ == "__main__":
    sys.exit(main())
