#!/usr/bin/env python3
"""Render a corpus of conversations with a chat template exactly as Hugging Face's
apply_chat_template does, for the [template] check.

    render_jinja.py TEMPLATE CORPUS_DIR OUT

TEMPLATE   a chat_template.jinja file
CORPUS_DIR a folder of conversation files (*.json): {"messages": [...], "tools": [...],
           "options": {"add_generation_prompt": bool, "enable_thinking": bool,
           "add_vision_id": bool}}; every field but "messages" is optional
OUT        where to write one JSON object: {case name: {"text": rendered} or
           {"error": message, "raised": true when the template called raise_exception}}

The environment is transformers' (src/transformers/utils/chat_template_utils.py):
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the loopcontrols
extension, its tojson filter (json.dumps with ensure_ascii=False and Python's default separators,
no HTML escaping) and raise_exception raising a TemplateError. Options that a case leaves out
stay undefined in the template, as they do when apply_chat_template is not passed them.

One departure from a bare apply_chat_template call, made the way OpenAI-compatible servers make
it (vLLM's chat_utils): an assistant tool call whose "arguments" is a JSON string is parsed into
its value first, since Qwen3.5's template iterates the arguments as a mapping.
"""
import json
import os
import sys

try:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("render_jinja.py: jinja2 is not installed", file=sys.stderr)
    sys.exit(3)


class TemplateRaised(jinja2.exceptions.TemplateError):
    pass


def raise_exception(message):
    raise TemplateRaised(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def make_template(source):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env.from_string(source)


def parse_string_arguments(messages):
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("tool_calls"), list):
            continue
        for call in message["tool_calls"]:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                function["arguments"] = json.loads(function["arguments"])


def render_case(template, case):
    messages = case["messages"]
    parse_string_arguments(messages)
    kwargs = dict(case.get("options", {}))
    kwargs.setdefault("add_generation_prompt", False)
    return template.render(messages=messages, tools=case.get("tools"), **kwargs)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    template_path, corpus_dir, out_path = sys.argv[1:]
    with open(template_path, encoding="utf-8") as f:
        template = make_template(f.read())
    results = {}
    for name in sorted(os.listdir(corpus_dir)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(corpus_dir, name), encoding="utf-8") as f:
            case = json.load(f)
        try:
            results[name[: -len(".json")]] = {"text": render_case(template, case)}
        except TemplateRaised as e:
            results[name[: -len(".json")]] = {"error": str(e), "raised": True}
        except Exception as e:  # the template failed on its own (a type error, an undefined value)
            results[name[: -len(".json")]] = {"error": f"{type(e).__name__}: {e}", "raised": False}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
