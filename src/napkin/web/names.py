"""What a name or a file may be on the web page: catalog names or uploaded files, never a server path.

On the command line a model may be a path to a Hugging Face config.json (or a folder holding
one) and a ``path`` field names a file to read. A request from a browser must not make the
server open its own files, nor tell whether a path exists (issue 15: ``draft=/etc/hostname``
in serve's waterfall read the file), so the web takes, before any calculator runs:

* a ``path`` field: uploaded files only;
* a model-valued ``name`` field: a catalog model (key or alias), checked against the catalog
  here, or an uploaded config.json; nothing typed reaches the model loader's path fallback,
  and nothing typed is looked up on the file system (no ``os.path.exists``, no open);
* any other ``name`` field (an accelerator, a price entry, a part of one's own): a short plain
  name, which those lookups read from the catalog alone;
* a list of free-text items (serve's ``waterfall``): each ``NAME=VALUE`` item
  whose NAME is a ``name`` or ``path`` field of the same request is held to that field's rule.

Which catalog a ``name`` field looks names up in comes from its declared doc
(:func:`name_catalog`); a field that is not plainly an accelerator or a price entry counts as
a model, the one lookup that falls back to reading files, so a new field gets the strict rule.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from napkin.errors import InputError
from napkin.web.uploads import Upload, is_upload

# a plain name: what a catalog key, an alias or a part of one's own looks like (no path separator, bounded)
PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._+:@-]{0,127}$")
MAX_NAME_CHARS = 128
ONLY = "the web page accepts catalog names or uploaded files only, never a path on the server"


def name_catalog(info: Any) -> str:
    """The catalog a ``name`` field looks up, from its doc: ``"gpus"``, ``"prices"`` or ``"models"``.

    ``"accelerator to fit on"`` and ``"GPU whose scale-up link to use"`` are accelerators; ``"API
    model in the price catalog"`` is a price entry; every other name field is taken for a model.
    """
    doc = info.doc.strip().lower()
    if "price catalog" in doc:
        return "prices"
    if doc.startswith(("accelerator", "gpu ")):
        return "gpus"
    return "models"


def model_fields(request_type: type) -> list[str]:
    """The request's fields whose value can reach the model loader (a catalog model, or a config.json)."""
    from napkin.request import fields

    return [f.name for f in fields(request_type) if f.kind == "name" and name_catalog(f) == "models"]


@functools.cache
def model_names() -> frozenset[str]:
    """Every catalog model key and alias, as the catalog compares them (case, ``_`` and spaces folded)."""
    from napkin import catalog

    out = set()
    for key, spec in catalog.models().items():
        out.add(catalog._norm(key))
        out.update(catalog._norm(a) for a in getattr(spec, "aliases", None) or ())
    return frozenset(out)


def is_catalog_model(text: str) -> bool:
    from napkin import catalog

    return len(text) <= MAX_NAME_CHARS and catalog._norm(text) in model_names()


def _refusal(field: str, text: str, command: str, step: str | None = None) -> InputError:
    """``field must be a catalog name on the web page``, with the closest catalog models where there are some."""
    from napkin import catalog
    from napkin.errors import closest

    near = closest(text[:MAX_NAME_CHARS], sorted(catalog.models())) if PLAIN_NAME.match(text) else []
    hint = f"did you mean {' or '.join(near)}? " if near else ""
    fix = (f"{hint}{ONLY} (GET /api lists the catalog; a config.json path works in a terminal: "
           f"`{command} ...`)")
    if step is not None:
        return InputError(field, step, f"has a step whose {step.split('=', 1)[0].strip()} "
                                       "must be a catalog name on the web page", fix)
    return InputError(field, text, "must be a catalog name on the web page", fix)


def check_name(info: Any, value: Any, command: str, *, field: str | None = None,
               step: str | None = None) -> None:
    """One value of a ``name`` field: a catalog model (or an upload) for a model, else a plain name.

    ``field`` and ``step`` name what the error shows when the value came inside another field
    (``waterfall`` and its ``draft=...`` step).
    """
    field = field or info.name
    if isinstance(value, Upload):
        if step is None and name_catalog(info) == "models":
            return  # an uploaded config.json: read from memory, as an upload
        raise InputError(field, value.filename, "must be a catalog name, not a file",
                         "type the name; GET /api lists the catalog")
    text = str(value).strip()
    if not text:
        return
    if name_catalog(info) == "models":
        if not is_catalog_model(text):
            raise _refusal(field, text, command, step)
    elif not PLAIN_NAME.match(text) or text.lower().endswith(".json"):
        raise _refusal(field, text, command, step)


def check_path(info: Any, value: Any, command: str, *, field: str | None = None,
               step: str | None = None) -> None:
    """A ``path`` field: uploads only."""
    if step is None and is_upload(value):
        return
    shown = step if step is not None else (value.filename if isinstance(value, Upload) else value)
    raise InputError(field or info.name, shown, "must be an uploaded file on the web page",
                     f"upload it, or run `{command} {info.option} FILE` in a terminal; {ONLY}")


def _items(info: Any, val: Any) -> list:
    """A field's raw value as the items the request parser reads (lists split at commas)."""
    items = val if isinstance(val, list) else [val]
    if info.container == "list":
        return [p for item in items for p in (str(item).split(",") if isinstance(item, str) else [item])]
    if info.container == "dict" and isinstance(val, dict):
        return list(val.values())
    return items


def check_steps(info: Any, val: Any, infos: dict[str, Any], command: str) -> None:
    """Free-text items such as serve's ``waterfall``: a ``NAME=VALUE`` item naming a name or path field
    of the same request is held to that field's rule (``draft=/etc/hostname`` is refused, unread).

    Items are split as the calculators split them (:func:`napkin.request._split_pairs`), so the
    value checked is the value the calculator would take.
    """
    from napkin.request import _split_pairs

    pieces = _split_pairs(val if isinstance(val, list) else [val])
    for piece in pieces:
        if not isinstance(piece, str) or "=" not in piece:
            continue
        key, value = (x.strip() for x in piece.split("=", 1))
        target = infos.get(key.replace("-", "_").lstrip("_"))
        if target is None or not value:
            continue
        if target.kind == "name":
            check_name(target, value, command, field=info.name, step=piece)
        elif target.kind == "path":
            check_path(target, value, command, field=info.name, step=piece)


def check_field(info: Any, val: Any, infos: dict[str, Any], command: str) -> None:
    """The web's rule for one field's raw value (see the module's doc)."""
    if info.kind == "path":
        check_path(info, val, command)
        return
    if info.kind == "name":
        if isinstance(val, dict):  # a name field's items are names, never NAME: VALUE pairs
            raise InputError(info.name, "an object", "must be a name or a list of names", "send the name as text")
        for item in _items(info, val):
            check_name(info, item, command)
        return
    uploaded = [v for v in (val if isinstance(val, list) else [val]) if isinstance(v, Upload)]
    if uploaded:
        raise InputError(info.name, uploaded[0].filename, "must be typed, not a file",
                         "type the value in the form")
    if info.kind == "text" and info.container == "list":
        check_steps(info, val, infos, command)
