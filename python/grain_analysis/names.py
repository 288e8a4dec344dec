"""Counter names, HPX style: /object{instance}/counter, the instance a path such as
locality#0/pool#default/worker#1 or locality#0/total (HPX's worker-thread#1 is read as
worker#1)."""
import re

_NAME = re.compile(r"^/(?P<object>[^/{}]+)(?:\{(?P<instance>[^{}]*)\})?/(?P<counter>.+)$")
_PART = re.compile(r"^(?P<key>[^#]+)#(?P<value>.*)$")


def split_name(full):
    """(object, instance, counter) of a counter's full name; ("knob", "", NAME) for a trace's
    knob:NAME metric; (None, None, full) for a name of another shape."""
    if full.startswith("knob:"):
        return "knob", "", full[5:]
    m = _NAME.match(full)
    if not m:
        return None, None, full
    return m.group("object"), m.group("instance") or "", m.group("counter")


def instance_parts(instance):
    """{"locality": 0, "pool": "default", "worker": 1} of an instance path; "total" is
    {"total": True}; numbers become ints; HPX's worker-thread is worker."""
    out = {}
    for part in (instance or "").split("/"):
        if not part:
            continue
        m = _PART.match(part)
        if not m:
            out[part] = True
            continue
        key, value = m.group("key"), m.group("value")
        if key == "worker-thread":
            key = "worker"
        out[key] = int(value) if value.isdigit() else value
    return out
