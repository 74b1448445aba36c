"""What every study's section of the report uses: the results as loaded
(Results), the numbers (medians, ratios, spreads, verdicts), the Markdown
table, and the headline ratios recorded as numbers for `pk-lab compare`."""
import math

# Each headline ratio as (study, ratio, value, (lo, hi) or None), in the
# order the sections make them: what `pk-lab compare` sets side by side.
RATIOS = []


def note_ratio(study, label, value, rng=None):
    if value is not None and not (isinstance(value, float) and math.isnan(value)):
        RATIOS.append((study, label, value, rng))


class Results:
    def __init__(self, data):
        self.data = data
        self.exps = {e["name"]: e for e in data.get("experiments", [])}

    def rows(self, exp, family=None, subject=None):
        e = self.exps.get(exp)
        if not e:
            return []
        out = []
        for r in e["rows"]:
            if family is not None and r["family"] != family:
                continue
            if subject is not None and r["subject"] != subject:
                continue
            out.append(r)
        return out

    def find(self, exp, subject, **params):
        for r in self.rows(exp, subject=subject):
            p = r.get("params", {})
            if all(key(p.get(k)) == key(v) for k, v in params.items()):
                return r
        return None

    def med(self, exp, subject, **params):
        r = self.find(exp, subject, **params)
        return value(r)

    def subjects(self, exp, measured_only=False, family=None):
        seen = []
        for r in self.rows(exp):
            if r["family"] == "published":
                continue
            if family and r["family"] != family:
                continue
            if measured_only and not r.get("available"):
                continue
            if r["subject"] not in seen:
                seen.append(r["subject"])
        return seen

    def unavailable(self, exp):
        """(subject, why) for subjects with no measured row."""
        out = []
        for s in self.subjects(exp):
            rs = self.rows(exp, subject=s)
            if not any(r.get("available") for r in rs):
                out.append((s, rs[0].get("why", "")))
        return out


def key(v):
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


def value(r):
    if not r or not r.get("available") or r.get("median") is None:
        return None
    return r["median"]


def extra(r, name):
    if not r or not r.get("available"):
        return None
    v = r.get("extra", {}).get(name)
    return v if isinstance(v, (int, float)) and math.isfinite(v) else None


def fmt(v, digits=3):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    a = abs(v)
    if a >= 10000 or (a >= 1 and float(v).is_integer()):
        return "{:,.0f}".format(v)
    if a >= 100:
        return "{:.0f}".format(v)
    if a >= 10:
        return "{:.1f}".format(v)
    if a >= 1:
        return "{:.2f}".format(v)
    if a == 0:
        return "0"
    return "{:.{d}g}".format(v, d=digits)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def times(x):
    return "–" if x is None else "{}×".format(fmt(x))


def pct(x):
    return "–" if x is None else "{:+.1f}%".format(x * 100)


def spread(ra, rb):
    """(lo, hi): the ratio ra/rb over the repetitions' [min, max] of both rows."""
    if not value(ra) or not value(rb):
        return None
    if not all(isinstance(r.get(k), (int, float)) and r.get(k) > 0
               for r in (ra, rb) for k in ("min", "max")):
        return None
    return ra["min"] / rb["max"], ra["max"] / rb["min"]


def verdict(med, rng, threshold, above=True):
    """Whether med (a ratio) is above (or below) threshold, and clearly so: the
    whole range of the repetitions on one side, or "within the spread"."""
    if med is None:
        return "not tested"
    ok = (lambda x: x >= threshold) if above else (lambda x: x <= threshold)
    if rng is None:
        return "holds" if ok(med) else "does not hold"
    if ok(rng[0]) and ok(rng[1]):
        return "holds"
    if not ok(rng[0]) and not ok(rng[1]):
        return "does not hold"
    return "within the spread: " + ("leans yes" if ok(med) else "leans no")


def with_range(med, rng):
    return times(med) + (" ({}–{})".format(fmt(rng[0]), fmt(rng[1])) if rng else "")


def table(headers, rows):
    out = ["| " + " | ".join(headers) + " |",
           "|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


# The two mimallocs: Debian's 2.0.9 and PyPI's 3.4. Neither is best at everything, so a target
# that compares to mimalloc compares to the faster of the two at each point (LAB.md).
MIMALLOCS = ("mimalloc", "mimalloc 3")


def faster_mimalloc(res, exp, **params):
    """The row of the faster mimalloc at a point (the lower median: for a memory figure, the
    smaller), or the one measured; None if neither."""
    rows = [r for r in (res.find(exp, s, **params) for s in MIMALLOCS) if value(r) is not None]
    return min(rows, key=value) if rows else None


def median_rows(res, exp, points, name="{}"):
    """A table's rows: each subject of exp (its cell: name.format(subject)) with its medians at
    points (each a dict of params), for the subjects measured at one of them at least."""
    body = []
    for s in res.subjects(exp):
        vals = [res.med(exp, s, **p) for p in points]
        if any(v is not None for v in vals):
            body.append([name.format(s)] + [fmt(v) for v in vals])
    return body


def worst_ratio(study, label, ratios):
    """The largest of ratios, a list of (ratio, spread) with ratio None where not measured, as
    (ratio, spread), noted as the study's headline (note_ratio); (None, None) if none was measured."""
    known = [(r, g) for r, g in ratios if r is not None]
    if not known:
        return None, None
    worst, rng = max(known, key=lambda x: x[0])
    note_ratio(study, label, worst, rng)
    return worst, rng


def run_params(res, exp):
    """The parameters the experiment ran with: its first available row's ({} when none ran)."""
    r0 = next((r for r in res.rows(exp) if r.get("available")), None)
    return r0["params"] if r0 else {}


def na_lines(res, exp):
    """The section's lines for its contenders that were not available, and a blank line; none if
    every one ran."""
    lines = ["- *{}*: not available: {}".format(s, why) for s, why in res.unavailable(exp)]
    return ["\n".join(lines), ""] if lines else []


def machine_line(d):
    m = d.get("machine", {})
    return "{} · {} cores · {} GiB · {} · {} · {}".format(
        m.get("cpu", "?"), m.get("cores", "?"), m.get("memory_gib", "?"), m.get("os", "?"),
        m.get("flags", m.get("compiler", "?")), m.get("poolkit", ""))


# The hardened pool beside the default one. Its rows carry the
# extra "vs_pk_pool": in each repetition its time over the default pool's in
# that same repetition; the median of those ratios is what a target judges.
HARDENED = "poolkit pk_pool HARDENED"


def vs_pool(r):
    """The median of the hardened row r's per-repetition ratios to the default pool, or None."""
    return extra(r, "vs_pk_pool")


def hardened_target(study, what, points, bound):
    """The hardened pool's target in one study: points, a list of (label, ratio or None), judged against
    bound (every measured ratio at most bound). Returns (the report's line, the headline row or
    None), and notes the worst ratio for `pk-lab compare`."""
    line = ("**Target (hardened {})**: pk_pool HARDENED ÷ the default pk_pool, {} (median of the "
            "repetitions' ratios, each from the two measured side by side; target ≤ {}×): ").format(
                study, what, fmt(bound)) + ", ".join("{} {}".format(label, times(r)) for label, r in points)
    known = [(r, label) for label, r in points if r is not None]
    if not known:
        return line + ": not measured.", None
    worst, at = max(known)
    v = verdict(worst, None, bound, above=False)
    line += " → {} (worst: {}).".format("met" if v == "holds" else "not met", at)
    note_ratio(study, "pk_pool HARDENED ÷ pk_pool, worst point", worst)
    head = ("hardened pools: {}".format(study),
            "pk_pool HARDENED ÷ the default pk_pool, {}, worst ({}) (target: ≤ {}×)".format(
                what, at, fmt(bound)), "–", times(worst), v)
    return line, head
