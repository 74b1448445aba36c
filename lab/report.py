#!/usr/bin/env python3
"""lab/report.py DIR/results.json: the lab's report, from pk-lab's results.

Writes, beside results.json: report.md (the machine line, a headline table
with one decisive ratio per study, one table and one finding per
experiment) and PNG charts drawn with matplotlib (the autorelease sweep,
hot-loop bars per allocator, the pattern's net cost per size, thread
scaling, common operations on a log scale, binary-trees, working sets
against N per free order). Every finding is
computed from the data; nothing here is a fixed number but the studies' own
published figures, which come from results.json too.

Without matplotlib (outside the project's .venv) it still writes report.md,
without charts, and says so.
"""
import json
import math
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    HAVE_MPL = True
except Exception as e:  # the report still works without charts
    HAVE_MPL = False
    MPL_WHY = str(e)


# ---- the ratios, as numbers (lab/compare.py reads them) -------------------

# Each headline ratio as (study, ratio, value, (lo, hi) or None), in the
# order the sections make them: what `pk-lab compare` sets side by side.
RATIOS = []


def note_ratio(study, label, value, rng=None):
    if value is not None and not (isinstance(value, float) and math.isnan(value)):
        RATIOS.append((study, label, value, rng))


# ---- reading --------------------------------------------------------------

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


def na_lines(res, exp):
    lines = []
    for s, why in res.unavailable(exp):
        lines.append("- *{}*: not available: {}".format(s, why))
    return "\n".join(lines)


# ---- the experiments ------------------------------------------------------

PER_POOL = [1000000, 100000, 10000, 1000, 100, 10, 1]


def autorelease_sweep(res, charts, outdir):
    exp = "autorelease-sweep"
    subs = res.subjects(exp)
    pubs = [s for s in dict.fromkeys(r["subject"] for r in res.rows(exp, family="published"))]
    md = ["## autorelease-sweep: \"Autorelease is Fast\" (2006)", ""]
    objects = None
    for r in res.rows(exp, subject="poolkit pk_new"):
        objects = r["params"].get("objects") or objects
    md.append("{} objects created and autoreleased per row; seconds for 1,000,000 objects "
              "(median), beside the study's four machines.".format(fmt(objects)))
    md.append("")
    hdr = ["objects per pool"] + subs + ["published: " + p for p in pubs]
    body = []
    for k in PER_POOL:
        row = [fmt(k)]
        for s in subs:
            row.append(fmt(res.med(exp, s, per_pool=k)))
        for p in pubs:
            row.append(fmt(res.med(exp, p, per_pool=k)))
        body.append(row)
    md.append(table(hdr, body))
    md.append("")
    # the decisive ratio: empty push/pop against one create+autorelease+release
    lines = []
    decisive = {}
    for s in subs:
        e = res.med(exp, s, op="empty push/pop")
        c = res.med(exp, s, op="create+autorelease+release")
        one, many = res.med(exp, s, per_pool=1), res.med(exp, s, per_pool=1000)
        if e is not None and c is not None:
            decisive[s] = (e, c, e / c, ratio(one, many))
            lines.append("- {}: an empty push/pop costs {} ns, one create+autorelease+release "
                         "{} ns: ratio **{}**; a pool per object costs {} against 1,000 per "
                         "pool.".format(s, fmt(e), fmt(c), fmt(e / c),
                                        pct(ratio(one, many) - 1) if one and many else "–"))
    pub_over = [(p, ratio(res.med(exp, p, per_pool=1), res.med(exp, p, per_pool=1000)))
                for p in pubs]
    lines.append("- published, a pool per object against 1,000 per pool: " + "; ".join(
        "{} {}".format(p, pct(o - 1)) for p, o in pub_over if o))
    # poolkit against GNUstep, per object
    gn = "GNUstep NSObject"
    speed = []
    for k in PER_POOL:
        a, b = res.med(exp, "poolkit pk_new", per_pool=k), res.med(exp, gn, per_pool=k)
        if a and b:
            speed.append(b / a)
    finding = ""
    pk = decisive.get("poolkit pk_new")
    if pk:
        e, c, r, over = pk
        holds = r <= 1.5
        finding = ("**Finding.** The claim (a pool costs about one object, so one pool per "
                   "iteration is fine) {} for poolkit: an empty push/pop is {} of one "
                   "create+autorelease+release ({} ns against {} ns), and a pool per object "
                   "adds {} over 1,000 per pool.").format(
            "holds" if holds else "does not hold", times(r), fmt(e), fmt(c),
            pct(over - 1) if over else "–")
        if gn in decisive:
            ge, gc, gr, gover = decisive[gn]
            finding += (" Under GNUstep the same ratio is {} ({} ns against {} ns).".format(
                times(gr), fmt(ge), fmt(gc)))
        if speed:
            finding += (" poolkit creates and autoreleases objects {}–{} faster than GNUstep "
                        "across the sweep.".format(times(min(speed)), times(max(speed))))
    md += lines + [""]
    if finding:
        md += [finding, ""]
    na = na_lines(res, exp)
    if na:
        md += [na, ""]
    # chart: ns per object against objects per pool
    if HAVE_MPL:
        fig, ax = plt.subplots(figsize=(8, 5))
        for s in subs:
            xs, ys = [], []
            for k in PER_POOL:
                v = res.med(exp, s, per_pool=k)
                if v:  # seconds per 1,000,000 objects
                    xs.append(k)
                    ys.append(v * 1e3)
            if xs:
                ax.plot(xs, ys, marker="o", label=s, color=color(s))
        for i, p in enumerate(pubs):
            xs = [k for k in PER_POOL if res.med(exp, p, per_pool=k)]
            ys = [res.med(exp, p, per_pool=k) / 1e6 * 1e9 for k in xs]
            ax.plot(xs, ys, linestyle="--", marker="s^vD"[i % 4], markersize=4,
                    color=str(0.25 + 0.15 * i), label="published: " + p)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.invert_xaxis()
        ax.set_xlabel("objects per autorelease pool (log)")
        ax.set_ylabel("ns per object (create + autorelease + release)")
        ax.set_title("autorelease-sweep: cost per object as pools shrink")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        save(fig, outdir, "autorelease_sweep.png", charts)
    head = None
    if pk:
        rng = spread(res.find(exp, "poolkit pk_new", op="empty push/pop"),
                     res.find(exp, "poolkit pk_new", op="create+autorelease+release"))
        head = [("Autorelease is Fast (2006)", "poolkit: empty push/pop ÷ create+autorelease+release "
                 "(the claim: about 1 or less, so \"one pool per iteration is fine\")", "≈ 1",
                 with_range(pk[2], rng), verdict(pk[2], rng, 1.5, above=False))]
        note_ratio("autorelease-sweep", "poolkit: empty push/pop ÷ create+autorelease+release", pk[2], rng)
        if gn in decisive:
            g = decisive[gn]
            grng = spread(res.find(exp, gn, op="empty push/pop"),
                          res.find(exp, gn, op="create+autorelease+release"))
            head.append(("Autorelease is Fast (2006)", "GNUstep: empty NSAutoreleasePool ÷ "
                         "NSObject create+autorelease+release", "≈ 1", with_range(g[2], grng),
                         verdict(g[2], grng, 1.5, above=False)))
        if speed:
            head.append(("Autorelease is Fast (2006)", "GNUstep ÷ poolkit per object across the sweep "
                         "(target: at least 10×)", "–", "{}–{}".format(times(min(speed)), times(max(speed))),
                         "holds" if min(speed) >= 10 else "does not hold"))
    return md, head


def alloc_styles(res, charts, outdir):
    exp = "alloc-styles"
    styles = ["new", "alloc+init", "allocWithZone+init"]
    pubs = list(dict.fromkeys(r["subject"] for r in res.rows(exp, family="published")))
    objc = [s for s in res.subjects(exp) if res.find(exp, s, style="new") is not None
            or not any(res.find(exp, s, style=st) for st in
                       ["malloc+init+free", "pk_pool_alloc+init+pk_pool_free", "pk_new+pk_release"])]
    md = ["## alloc-styles: \"alloc, allocWithZone showdown\" (2009)", "",
          "Create and release one object; ns per iteration (median)."]
    md.append("")
    md.append(table(["style"] + objc + ["published: " + p for p in pubs],
                    [[st] + [fmt(res.med(exp, s, style=st)) for s in objc]
                     + [fmt(res.med(exp, p, style=st)) for p in pubs] for st in styles]))
    md.append("")
    c_rows = [("glibc malloc", "malloc+init+free"), ("poolkit pk_pool",
              "pk_pool_alloc+init+pk_pool_free"), ("poolkit pk_new", "pk_new+pk_release")]
    md.append(table(["C analogue", "ns per iteration"],
                    [[st, fmt(res.med(exp, s, style=st))] for s, st in c_rows]))
    md.append("")
    pub_save = [ratio(res.med(exp, p, style="allocWithZone+init"), res.med(exp, p, style="new"))
                for p in pubs]
    pub_save = [1 - x for x in pub_save if x]
    def saving(z, n):
        d = 1 - z / n
        return ("saves {:.1f}% against".format(d * 100) if d >= 0
                else "costs {:.1f}% more than".format(-d * 100))

    lines = []
    for s in objc:
        z, n = res.med(exp, s, style="allocWithZone+init"), res.med(exp, s, style="new")
        if z and n:
            lines.append("for {}, allocWithZone+init {} new".format(s, saving(z, n)))
    nso, pko = res.med(exp, "GNUstep NSObject", style="alloc+init"), res.med(
        exp, "PKObject", style="alloc+init")
    mal, pkn = res.med(exp, "glibc malloc", style="malloc+init+free"), res.med(
        exp, "poolkit pk_new", style="pk_new+pk_release")
    finding = "**Finding.** The study measured allocWithZone+init saving {:.1f}% to {:.1f}% against new. ".format(
        min(pub_save) * 100 if pub_save else float("nan"), max(pub_save) * 100 if pub_save else float("nan"))
    if lines:
        finding += "Here: " + "; ".join(lines) + ". "
    else:
        finding += "The Objective-C rows are not available here, so the claim is not tested. "
    if nso and pko:
        finding += "PKObject alloc+init+release is {} faster than NSObject ({} ns against {} ns). ".format(
            times(nso / pko), fmt(pko), fmt(nso))
    if mal and pkn:
        finding += "In C, pk_new+pk_release costs {} ns against malloc+init+free's {} ns ({}).".format(
            fmt(pkn), fmt(mal), times(mal / pkn))
    md += [finding, ""]
    na = na_lines(res, exp)
    if na:
        md += [na, ""]
    head = None
    s = "GNUstep NSObject"
    z, n = res.med(exp, s, style="allocWithZone+init"), res.med(exp, s, style="new")
    if z and n:
        d = 1 - z / n
        rng = spread(res.find(exp, s, style="allocWithZone+init"), res.find(exp, s, style="new"))
        here = "{:.1f}%".format(d * 100)
        if rng:
            here += " ({:.0f}% to {:.0f}%)".format((1 - rng[1]) * 100, (1 - rng[0]) * 100)
        note_ratio("alloc-styles", "GNUstep: allocWithZone+init ÷ new", z / n, rng)
        head = ("alloc, allocWithZone showdown (2009)", "time saved by allocWithZone+init against new (GNUstep)",
                "{:.1f}% to {:.1f}%".format(min(pub_save) * 100, max(pub_save) * 100) if pub_save
                else "1.5 to 7%", here, verdict(z / n, rng, 1.0, above=False))
    elif mal and pkn:
        head = ("alloc, allocWithZone showdown (2009)", "GNUstep rows not available; C: malloc+init+free ÷ "
                "pk_new+pk_release", "–", times(mal / pkn), "not tested")
    return md, head


COMMON_ORDER = [
    "IMP-cached message send", "C++ virtual method call", "integer division",
    "Objective-C message send", "float division with int conversion",
    "floating-point division", "16-byte memcpy", "16-byte malloc/free",
    "pk_pool alloc/free (16 B)", "pk_arena alloc (16 B)", "NSInvocation message send",
    "NSObject alloc/init/release", "PKObject alloc/init/release", "pk_new/pk_release",
    "NSAutoreleasePool alloc/init/release", "pk_autorelease push/pop", "NSButtonCell creation",
    "16 MB malloc/free", "read 16-byte file", "zero-second delayed perform", "NSButtonCell draw",
    "pthread create/join", "1 MB memcpy", "write 16-byte file", "write 16-byte file (atomic)",
    "process spawn", "read 16 MB file", "write 16 MB file", "write 16 MB file (atomic)",
]
REPLACES = {"pk_pool alloc/free (16 B)": "16-byte malloc/free",
            "pk_arena alloc (16 B)": "16-byte malloc/free",
            "PKObject alloc/init/release": "NSObject alloc/init/release",
            "pk_new/pk_release": "NSObject alloc/init/release",
            "pk_autorelease push/pop": "NSAutoreleasePool alloc/init/release"}


def common_ops(res, charts, outdir):
    exp = "common-ops"
    measured, published, why = {}, {}, {}
    generic_na = None
    for r in res.rows(exp):
        op = r.get("params", {}).get("op")
        if r["family"] == "published":
            published[op] = r["median"]
        elif op is None:
            if not r.get("available"):
                generic_na = r.get("why")
        elif r.get("available"):
            measured[op] = r
        else:
            why[op] = r.get("why", "")
    md = ["## common-ops: \"Performance Comparisons of Common Operations\" (2007)", "",
          "ns per operation (median); published: 2.66 GHz Mac Pro. Sub-microsecond C rows are "
          "net of an empty loop; poolkit's rows (↳) sit under the row they replace.", ""]
    body = []
    for op in COMMON_ORDER:
        r = measured.get(op)
        name = ("↳ " if op in REPLACES else "") + op
        pub = published.get(op)
        if r:
            it = r["params"].get("iterations")
            total = r["median"] * it / 1e9 if it else None
            body.append([name, fmt(it), fmt(total), fmt(r["median"]), fmt(pub),
                         times(ratio(r["median"], pub))])
        else:
            w = why.get(op) or generic_na or "not measured"
            body.append([name, "", "", "not available: " + w, fmt(pub), ""])
    md.append(table(["operation", "iterations", "total s", "ns/op", "published ns/op",
                     "here ÷ published"], body))
    md.append("")
    m = lambda op: measured[op]["median"] if op in measured else None
    mf, vc = m("16-byte malloc/free"), m("C++ virtual method call")
    pool, arena, pkn, nso, pko = (m("pk_pool alloc/free (16 B)"), m("pk_arena alloc (16 B)"),
                                  m("pk_new/pk_release"), m("NSObject alloc/init/release"),
                                  m("PKObject alloc/init/release"))
    pub_mf_vc = ratio(published.get("16-byte malloc/free"), published.get("C++ virtual method call"))
    finding = ("**Finding.** The study's lesson is the spread: a 16-byte malloc/free cost {} "
               "virtual calls in 2007; here it costs {}.").format(
        times(pub_mf_vc), times(ratio(mf, vc)))
    if mf and pool:
        finding += " poolkit's pool alloc/free replaces it at {} ns ({} cheaper)".format(
            fmt(pool), times(mf / pool))
        if arena:
            finding += ", an arena allocation at {} ns".format(fmt(arena))
        finding += "."
    if pkn and nso:
        finding += " pk_new/pk_release costs {} ns against NSObject alloc/init/release's {} ns ({}).".format(
            fmt(pkn), fmt(nso), times(nso / pkn))
    elif pkn:
        finding += " pk_new/pk_release costs {} ns (the study's NSObject alloc/init/release: {} ns).".format(
            fmt(pkn), fmt(published.get("NSObject alloc/init/release")))
    if pko and nso:
        finding += " PKObject alloc/init/release: {} ns ({} NSObject).".format(fmt(pko), times(nso / pko))
    md += [finding, ""]
    if HAVE_MPL:
        names = [op for op in COMMON_ORDER if op in measured or op in published]
        fig, ax = plt.subplots(figsize=(9, 0.32 * len(names) + 1.5))
        ys = range(len(names))
        here = [max(measured[op]["median"], 0.01) if op in measured else 0 for op in names]
        pubv = [published.get(op) or 0 for op in names]
        ax.barh([y - 0.2 for y in ys], here, height=0.4, label="here",
                color=["#2ca02c" if op in REPLACES else "#2a7ab9" for op in names])
        ax.barh([y + 0.2 for y in ys], pubv, height=0.4, label="published (2007)", color="#bbbbbb")
        ax.set_yticks(list(ys))
        ax.set_yticklabels([("  ↳ " if op in REPLACES else "") + op for op in names], fontsize=7)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("ns per operation (log)")
        ax.set_title("common-ops: what common operations cost (green: poolkit's replacements)")
        ax.grid(True, axis="x", which="both", alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, outdir, "common_ops.png", charts)
    row = lambda op: measured.get(op)
    note_ratio("common-ops", "16-byte malloc/free ÷ C++ virtual call", ratio(mf, vc),
               spread(row("16-byte malloc/free"), row("C++ virtual method call")))
    note_ratio("common-ops", "malloc/free ÷ pool alloc/free", ratio(mf, pool),
               spread(row("16-byte malloc/free"), row("pk_pool alloc/free (16 B)")))
    head = ("Performance Comparisons of Common Operations (2007)",
            "16-byte malloc/free ÷ C++ virtual call", times(pub_mf_vc), times(ratio(mf, vc)),
            "pool alloc/free {} cheaper than malloc/free".format(times(ratio(mf, pool))) if pool else "")
    return md, head


REMEDIES = ["avoid autorelease", "allocWithZone", "custom new", "ring buffer", "bunches"]


def object_generation(res, charts, outdir):
    exp = "object-generation"
    pubsub = "Mulle kybernetiK 2002 (Foundation)"
    subs = [s for s in res.subjects(exp)
            if any(r["params"].get("remedy") != "C analogues" for r in res.rows(exp, subject=s))]
    md = ["## object-generation: \"Optimized Object Generation\" (Mulle kybernetiK, 2002)", "",
          "Each remedy against its baseline: baseline → remedy ns per object, and the speed-up.", ""]
    body = []
    for rem in REMEDIES:
        pb, pr = res.med(exp, pubsub, remedy=rem, variant="baseline"), res.med(
            exp, pubsub, remedy=rem, variant="remedy")
        row = [rem, "{} s → {} s ({})".format(fmt(pb), fmt(pr), times(pb / pr)) if pb and pr
               else "\"a very small amount\""]
        for s in subs:
            b, r = res.med(exp, s, remedy=rem, variant="baseline"), res.med(
                exp, s, remedy=rem, variant="remedy")
            if b and r:
                row.append("{} → {} ({})".format(fmt(b), fmt(r), times(b / r)))
            elif b or r:
                row.append("{} → {}".format(fmt(b), fmt(r)))
            else:
                row.append("–")
        body.append(row)
    md.append(table(["remedy", "published"] + subs, body))
    md.append("")
    c = [("glibc malloc", "malloc/free"), ("C ring buffer (10,000 slots)", "ring buffer"),
         ("C bunch (16 per malloc)", "bunch"), ("poolkit pk_pool", "pk_pool")]
    base = res.med(exp, "glibc malloc", remedy="C analogues", variant="malloc/free")
    md.append(table(["C analogue", "ns per object", "against malloc/free"],
                    [[s, fmt(res.med(exp, s, remedy="C analogues", variant=v)),
                      times(ratio(base, res.med(exp, s, remedy="C analogues", variant=v)))]
                     for s, v in c]))
    md.append("")
    pool = res.med(exp, "poolkit pk_pool", remedy="C analogues", variant="pk_pool")
    ring = res.med(exp, "C ring buffer (10,000 slots)", remedy="C analogues", variant="ring buffer")
    bunch = res.med(exp, "C bunch (16 per malloc)", remedy="C analogues", variant="bunch")
    headline = res.med(exp, pubsub, remedy="headline")
    finding = ("**Finding.** The study's headline: object allocation {} faster than Foundation "
               "(\"300%\"). ").format(times(headline))
    # GNUstep against PKObject, if present
    gb = res.med(exp, "GNUstep NSObject", remedy="ring buffer", variant="baseline")
    pk = res.med(exp, "PKObject", remedy="ring buffer", variant="baseline") or res.med(
        exp, "PKObject", remedy="ring buffer", variant="remedy")
    if gb and pk:
        finding += "PKObject alloc/init/release against NSObject's: {}. ".format(times(gb / pk))
    finding += ("In C, against malloc/free (which glibc's thread cache already makes a LIFO "
                "reuse list), the ring buffer gives {}, the bunch {}, pk_pool {}.").format(
        times(ratio(base, ring)), times(ratio(base, bunch)), times(ratio(base, pool)))
    md += [finding, ""]
    na = na_lines(res, exp)
    if na:
        md += [na, ""]
    if gb and pk:
        rng = spread(res.find(exp, "GNUstep NSObject", remedy="ring buffer", variant="baseline"),
                     res.find(exp, "PKObject", remedy="ring buffer", variant="baseline")
                     or res.find(exp, "PKObject", remedy="ring buffer", variant="remedy"))
        head = ("Optimized Object Generation (2002)", "NSObject ÷ PKObject alloc/init/release "
                "(\"300% faster\")", times(headline), with_range(gb / pk, rng), verdict(gb / pk, rng, 3.0))
        note_ratio("object-generation", "NSObject ÷ PKObject alloc/init/release", gb / pk, rng)
    else:
        note_ratio("object-generation", "malloc/free ÷ pk_pool (C analogue)", ratio(base, pool),
                   spread(res.find(exp, "glibc malloc", remedy="C analogues", variant="malloc/free"),
                          res.find(exp, "poolkit pk_pool", remedy="C analogues", variant="pk_pool")))
        head = ("Optimized Object Generation (2002)", "malloc/free ÷ pk_pool (C analogue; GNUstep "
                "rows not available)", times(headline), times(ratio(base, pool)),
                "holds" if base and pool and base / pool >= 3 else "does not hold")
    return md, head


SIZES = ["small", "medium", "big"]


def pool_pattern(res, charts, outdir):
    exp = "pool-pattern"
    subs = res.subjects(exp)
    md = ["## pool-pattern: the typed memory pool benchmark (Zig, 2023)", "",
          "ns per round (median), net of the empty loop, and peak RSS of each contender's "
          "child process. Published: µs per operation for the general-purpose allocator / "
          "arena / pool.", ""]
    pubs = ["Zig 2023: general-purpose allocator", "Zig 2023: ArenaAllocator", "Zig 2023: MemoryPool"]
    for size in SIZES:
        r0 = next((r for r in res.rows(exp) if r["params"].get("size") == size
                   and r["family"] != "published"), None)
        rounds = r0["params"].get("rounds") if r0 else None
        pv = [res.med(exp, p, size=size) for p in pubs]
        md.append("**{}** ({} rounds; published: raw {} µs, arena {} µs, pool {} µs)".format(
            size, fmt(rounds), *[fmt(v / 1000 if v else None) for v in pv]))
        md.append("")
        body = []
        for s in subs:
            r = res.find(exp, s, size=size)
            if not r or not r.get("available"):
                continue
            body.append([s, fmt(value(r)), "{} – {}".format(fmt(r["min"]), fmt(r["max"])),
                         fmt(extra(r, "net")), fmt(extra(r, "allocs")), fmt(extra(r, "peak_live")),
                         fmt(extra(r, "peak_rss_kb"))])
        md.append(table(["contender", "ns/round", "min – max", "net ns", "allocs", "peak live",
                         "peak RSS KiB"], body))
        md.append("")
    # decisive: raw (glibc) ÷ pool (pk_pool), net, per size, against published raw ÷ pool
    parts, lowest = [], []
    for size in SIZES:
        g = extra(res.find(exp, "glibc malloc", size=size), "net")
        p = extra(res.find(exp, "poolkit pk_pool", size=size), "net")
        pr, pp = res.med(exp, pubs[0], size=size), res.med(exp, pubs[2], size=size)
        parts.append((size, ratio(g, p), ratio(pr, pp)))
        nets = [(extra(res.find(exp, s, size=size), "net"), s) for s in subs if s != "empty loop"]
        nets = [(v, s) for v, s in nets if v is not None]
        if nets:
            lowest.append((size, min(nets)[1]))
    finding = "**Finding.** The study's pool beat the general-purpose allocator by " + ", ".join(
        "{} ({})".format(times(pub), size) for size, _, pub in parts) + "; here pk_pool against "
    finding += "glibc malloc, net of the harness: " + ", ".join(
        "{} ({})".format(times(mine), size) for size, mine, _ in parts) + ". "
    if lowest:
        finding += "Lowest net cost: " + ", ".join("{} {}".format(size, s) for size, s in lowest) + "."
    md += [finding, ""]
    na = na_lines(res, exp)
    if na:
        md += [na, ""]
    if HAVE_MPL:
        shown = [s for s in subs if s != "empty loop"
                 and any(extra(res.find(exp, s, size=z), "net") is not None for z in SIZES)]
        fig, ax = plt.subplots(figsize=(10, 5))
        width = 0.8 / max(len(shown), 1)
        for i, s in enumerate(shown):
            vals = [extra(res.find(exp, s, size=z), "net") for z in SIZES]
            vals = [max(v, 0.5) if v is not None else 0 for v in vals]
            ax.bar([k + i * width for k in range(len(SIZES))], vals, width, label=s, color=color(s))
        ax.set_xticks([k + 0.4 - width / 2 for k in range(len(SIZES))])
        ax.set_xticklabels(["small (1 B)", "medium (8 KiB)", "big (1 MiB)"])
        ax.set_yscale("log")
        ax.set_ylabel("net ns per round (log; floor 0.5)")
        ax.set_title("pool-pattern: net cost per size")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        save(fig, outdir, "pattern_net.png", charts)
    small = [m for s, m, _ in parts if s == "small"][0]
    big = [m for s, m, _ in parts if s == "big"][0]
    note_ratio("pool-pattern", "general-purpose ÷ pool, net, small", small)
    note_ratio("pool-pattern", "general-purpose ÷ pool, net, big", big)
    head = ("Typed memory pool benchmark (Zig, 2023)", "general-purpose ÷ pool, net (small / big)",
            "{} / {}".format(times(parts[0][2]), times(parts[2][2])),
            "{} / {}".format(times(small), times(big)),
            "holds" if small and big and small > 1 and big > 1 else "does not hold")
    return md, head


def peers(res, charts, outdir):
    exp = "peers"
    subs = res.subjects(exp)
    sizes = sorted({int(r["params"]["size"]) for r in res.rows(exp) if "size" in r["params"]})
    md = ["## peers: hot loop and batch loop, every allocator", ""]
    ranks = {}
    for loop, what in (("hot", "allocate+touch+free"), ("batch", "object, batches of 1,024 freed in random order")):
        md.append("**{} loop**: ns per {}, net of the empty loop (median)".format(loop, what))
        md.append("")
        body = []
        for s in subs:
            if s == "empty loop":
                continue
            cells = []
            for z in sizes:
                r = res.find(exp, s, loop=loop, size=z)
                cells.append(fmt(extra(r, "net")) if r and r.get("available") else "–")
            if all(c == "–" for c in cells):
                continue
            body.append([s] + cells)
        body.append(["(empty loop, gross)"] + [fmt(res.med(exp, "empty loop", loop=loop, size=z))
                                                for z in sizes])
        md.append(table(["allocator"] + ["{} B".format(z) for z in sizes], body))
        md.append("")
        if loop == "hot":
            for z in sizes:
                nets = sorted((extra(res.find(exp, s, loop="hot", size=z), "net"), s) for s in subs
                              if s != "empty loop" and extra(res.find(exp, s, loop="hot", size=z), "net")
                              is not None)
                ranks[z] = [s for _, s in nets]
    pk_rank = {z: (r.index("poolkit pk_pool") + 1 if "poolkit pk_pool" in r else None, len(r))
               for z, r in ranks.items()}
    firsts = {z: r[0] for z, r in ranks.items() if r}
    finding = "**Finding.** In the hot loop, pk_pool ranks " + ", ".join(
        "{} of {} at {} B".format(rk, n, z) for z, (rk, n) in pk_rank.items() if rk) + "; "
    finding += "the fastest rows: " + ", ".join("{} B {}".format(z, s) for z, s in firsts.items()) + "."
    md += [finding, ""]
    na = na_lines(res, exp)
    if na:
        md += [na, ""]
    if HAVE_MPL and sizes:
        shown = [s for s in subs if s != "empty loop"
                 and any(extra(res.find(exp, s, loop="hot", size=z), "net") is not None for z in sizes)]
        fig, ax = plt.subplots(figsize=(11, 5))
        width = 0.8 / max(len(shown), 1)
        for i, s in enumerate(shown):
            vals = [extra(res.find(exp, s, loop="hot", size=z), "net") for z in sizes]
            vals = [max(v, 0.1) if v is not None else 0 for v in vals]
            ax.bar([k + i * width for k in range(len(sizes))], vals, width, label=s, color=color(s))
        ax.set_xticks([k + 0.4 - width / 2 for k in range(len(sizes))])
        ax.set_xticklabels(["{} B".format(z) for z in sizes])
        ax.set_yscale("log")
        ax.set_ylabel("net ns per allocate+touch+free (log; floor 0.1)")
        ax.set_title("peers: hot loop, per allocator and size")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=3)
        save(fig, outdir, "hot_loop.png", charts)
    firsts_pk = sum(1 for s in firsts.values() if s.startswith("poolkit"))
    head = ("peers (hot loop)", "sizes where a poolkit row is the fastest", "–",
            "{} of {}".format(firsts_pk, len(firsts)), "")
    return md, head


def threads(res, charts, outdir):
    exp = "threads"
    subs = res.subjects(exp)
    counts = sorted({int(r["params"]["threads"]) for r in res.rows(exp) if "threads" in r["params"]})
    md = ["## threads: producer/consumer and per-thread churn, 64-byte objects", "",
          "Million objects allocated and freed per second, all threads together (higher is better).", ""]
    for wl in ("producer/consumer", "churn"):
        md.append("**{}**".format(wl))
        md.append("")
        body = []
        for s in subs:
            vals = [res.med(exp, s, workload=wl, threads=t) for t in counts]
            if all(v is None for v in vals):
                continue
            body.append([s] + [fmt(v) for v in vals] + [times(ratio(vals[-1], vals[0]))])
        md.append(table(["allocator"] + ["{} thread{}".format(t, "s" if t > 1 else "") for t in counts]
                        + ["scaling"], body))
        md.append("")
    tmax = counts[-1] if counts else 1
    pk = res.med(exp, "poolkit pk_pool", workload="producer/consumer", threads=tmax)
    gl = res.med(exp, "glibc malloc", workload="producer/consumer", threads=tmax)
    best = None
    for s in subs:
        v = res.med(exp, s, workload="producer/consumer", threads=tmax)
        if v and (best is None or v > best[0]):
            best = (v, s)
    finding = ("**Finding.** With {} threads passing objects to one another, pk_pool moves {} M "
               "objects/s against glibc's {} ({}).").format(tmax, fmt(pk), fmt(gl), times(ratio(pk, gl)))
    if best:
        finding += " Highest: {} ({} M/s).".format(best[1], fmt(best[0]))
    md += [finding, ""]
    na = na_lines(res, exp)
    if na:
        md += [na, ""]
    if HAVE_MPL and counts:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        for ax, wl in zip(axes, ("producer/consumer", "churn")):
            for s in subs:
                pts = [(t, res.med(exp, s, workload=wl, threads=t)) for t in counts]
                pts = [(t, v) for t, v in pts if v]
                if pts:
                    ax.plot([t for t, _ in pts], [v for _, v in pts], marker="o", label=s,
                            color=color(s))
            ax.set_xticks(counts)
            ax.set_xlabel("threads")
            ax.set_ylabel("M objects/s")
            ax.set_title(wl)
            ax.grid(True, alpha=0.3)
            ax.set_ylim(bottom=0)
        axes[0].legend(fontsize=7)
        fig.suptitle("threads: throughput and scaling")
        save(fig, outdir, "threads.png", charts)
    note_ratio("threads", "pk_pool ÷ glibc malloc at {} threads".format(tmax), ratio(pk, gl),
               spread(res.find(exp, "poolkit pk_pool", workload="producer/consumer", threads=tmax),
                      res.find(exp, "glibc malloc", workload="producer/consumer", threads=tmax)))
    head = ("threads (producer/consumer)", "pk_pool ÷ glibc malloc at {} threads".format(tmax), "–",
            times(ratio(pk, gl)), "")
    return md, head


def binary_trees(res, charts, outdir):
    exp = "binary-trees"
    subs = res.subjects(exp)
    depth = None
    for r in res.rows(exp):
        depth = r["params"].get("depth") or depth
    base = res.med(exp, "glibc malloc", depth=depth)
    md = ["## binary-trees: the Benchmarks Game program (depth {}, one thread)".format(depth), ""]
    body = []
    for s in subs:
        r = res.find(exp, s, depth=depth) or res.find(exp, s)
        if not value(r):
            continue
        body.append([s, fmt(value(r)), "{} – {}".format(fmt(r["min"]), fmt(r["max"])),
                     times(ratio(base, value(r)))])
    md.append(table(["nodes from", "ms", "min – max", "against malloc"], body))
    md.append("")
    best = min(((value(res.find(exp, s, depth=depth)), s) for s in subs
                if value(res.find(exp, s, depth=depth))), default=None)
    pool = res.med(exp, "poolkit pk_pool", depth=depth)
    finding = "**Finding.** pk_pool runs the program {} faster than malloc".format(times(ratio(base, pool)))
    if best:
        finding += "; fastest: {} ({} ms)".format(best[1], fmt(best[0]))
    md += [finding + ".", ""]
    na = na_lines(res, exp)
    if na:
        md += [na, ""]
    if HAVE_MPL and body:
        fig, ax = plt.subplots(figsize=(7, 3.5))
        names = [b[0] for b in body]
        vals = [value(res.find(exp, s, depth=depth)) for s in names]
        ax.barh(names, vals, color="#2a7ab9")
        ax.invert_yaxis()
        ax.set_xlabel("ms for the whole program")
        ax.set_title("binary-trees, depth {}".format(depth))
        ax.grid(True, axis="x", alpha=0.3)
        save(fig, outdir, "binary_trees.png", charts)
    note_ratio("binary-trees", "malloc ÷ pk_pool, whole program", ratio(base, pool),
               spread(res.find(exp, "glibc malloc", depth=depth), res.find(exp, "poolkit pk_pool", depth=depth)))
    head = ("binary-trees (Benchmarks Game)", "malloc ÷ pk_pool, whole program", "–",
            times(ratio(base, pool)), "")
    return md, head


WS_ORDERS = ["LIFO", "FIFO", "random"]
WS_MALLOCS = ["glibc malloc", "jemalloc", "mimalloc", "tcmalloc"]


def ws_is_peer(res, exp, s):
    """A peer that frees each object (not an empty loop, nor a bulk-free arena)."""
    rs = [r for r in res.rows(exp, subject=s) if r.get("available")]
    if not rs or rs[0]["family"] != "peer" or "empty" in s:
        return False
    return all(extra(r, "frees_each") != 0 for r in rs)


def ws_fastest(res, exp, cands, **params):
    """(ns, subject) of the fastest measured candidate at these params, or None."""
    vals = [(res.med(exp, s, **params), s) for s in cands]
    vals = [(v, s) for v, s in vals if v is not None]
    return min(vals) if vals else None


def workset(res, charts, outdir):
    exp = "workset"
    subs = res.subjects(exp)
    rows = [r for r in res.rows(exp) if r["family"] != "published"]
    counts = sorted({int(r["params"]["n"]) for r in rows if "n" in r.get("params", {})})
    sizes = sorted({int(r["params"]["size"]) for r in rows if "size" in r.get("params", {})})
    md = ["## workset: working sets of 1,000 to 1,000,000 objects", "",
          "Allocate N objects (touching each), free all in LIFO, FIFO or random order, repeat; "
          "ns per allocate+free pair (median, gross: the empty loops show what the loop itself "
          "costs). Each C contender runs in a fresh child process; APR pools and pk_arena free "
          "a whole phase at once, whatever the order.", ""]
    peers_ = [s for s in subs if ws_is_peer(res, exp, s)]
    mallocs = [s for s in WS_MALLOCS if s in subs]
    head_parts, finding = [], []
    for size in sizes:
        for order in WS_ORDERS:
            md.append("**{}, {} B**".format(order, size))
            md.append("")
            body = []
            for s in subs:
                cells = [fmt(res.med(exp, s, order=order, n=n, size=size)) for n in counts]
                if all(c == "–" for c in cells):
                    continue
                body.append([s] + cells)
            md.append(table(["allocator"] + ["N = {}".format(fmt(n)) for n in counts], body))
            md.append("")
        # faults per repeated phase (the most over the orders) and bytes per object
        nmax = counts[-1] if counts else None
        empty_kb = extra(res.find(exp, "empty loop", order="LIFO", n=nmax, size=size), "peak_rss_kb")
        body = []
        for s in subs:
            cells = []
            for n in counts:
                fs = [extra(res.find(exp, s, order=o, n=n, size=size), "faults_repeat") for o in WS_ORDERS]
                fs = [f for f in fs if f is not None]
                cells.append(fmt(max(fs)) if fs else "–")
            kb = extra(res.find(exp, s, order="LIFO", n=nmax, size=size), "peak_rss_kb")
            per_obj = (kb - (empty_kb or 0)) * 1024 / nmax if kb is not None and nmax else None
            if all(c == "–" for c in cells):
                continue
            body.append([s] + cells + [fmt(per_obj)])
        md.append("Minor page faults per repeated phase ({} B; the most over the three orders), "
                  "and peak RSS growth per object at N = {} (LIFO, net of the empty loop's; "
                  "C contenders only):".format(size, fmt(nmax)))
        md.append("")
        md.append(table(["allocator"] + ["N = {}".format(fmt(n)) for n in counts] + ["bytes/object"], body))
        md.append("")
        # the headline: pk_pool against the fastest peer, and against the fastest malloc
        for order in WS_ORDERS:
            parts, vs_malloc = [], []
            for n in counts:
                pk = res.med(exp, "poolkit pk_pool", order=order, n=n, size=size)
                best = ws_fastest(res, exp, peers_, order=order, n=n, size=size)
                bm = ws_fastest(res, exp, mallocs, order=order, n=n, size=size)
                if pk and best:
                    parts.append((n, pk / best[0], best[1]))
                if pk and bm:
                    vs_malloc.append((n, pk / bm[0], bm[1]))
            if not parts:
                continue
            limit = 1.0 if order == "random" else 0.75
            met = sum(1 for _, r, _ in vs_malloc if r <= limit)
            finding.append("- **{}** ({} B): pk_pool ÷ the fastest peer: {}. Against the fastest of "
                           "glibc, jemalloc, mimalloc and tcmalloc (issue 9's target: at most {}×{}): "
                           "met at {} of {} N.".format(
                               order, size, ", ".join("{} at N = {} ({})".format(times(r), fmt(n), b)
                                                      for n, r, b in parts),
                               fmt(limit), ", or 1.3× a naive free list: see bench_workset"
                               if order != "random" else "", met, len(vs_malloc)))
            if size == sizes[0] or size == 48:
                head_parts.append((order, min(r for _, r, _ in parts), max(r for _, r, _ in parts)))
        pkf = [extra(res.find(exp, "poolkit pk_pool", order=o, n=n, size=size), "faults_repeat")
               for o in WS_ORDERS for n in counts]
        pkf = [f for f in pkf if f is not None]
        if pkf:
            finding.append("- page faults per repeated phase ({} B): pk_pool at most {} (goal: 0){}.".format(
                size, fmt(max(pkf)), "; zero faults: " + ", ".join(
                    s for s in subs if "empty" not in s and all(
                        (extra(res.find(exp, s, order=o, n=n, size=size), "faults_repeat") or 0) < 0.5
                        for o in WS_ORDERS for n in counts)
                    and any(res.find(exp, s, order=o, n=n, size=size) for o in WS_ORDERS for n in counts))))
    if finding:
        md += ["**Finding.** poolkit pk_pool against the fastest peer that frees each object "
               "(glibc, jemalloc, mimalloc, tcmalloc, Boost.Pool, GLib, talloc, Zig MemoryPool: "
               "whichever ran):", ""] + finding + [""]
    na = na_lines(res, exp)
    if na:
        md += [na, ""]
    if HAVE_MPL and counts:
        for size in sizes:
            fig, axes = plt.subplots(1, 3, figsize=(15, 5), sharey=True)
            for ax, order in zip(axes, WS_ORDERS):
                for s in subs:
                    pts = [(n, res.med(exp, s, order=order, n=n, size=size)) for n in counts]
                    pts = [(n, v) for n, v in pts if v]
                    if not pts:
                        continue
                    style = dict(marker="o", markersize=3, label=s, color=color(s))
                    if "empty" in s:
                        style.update(linestyle=":", color="#888888")
                    elif s == "poolkit pk_pool":
                        style.update(linewidth=2.5, color="#000000")
                    elif s.startswith("poolkit"):
                        style.update(linewidth=2, linestyle="--", color="#444444")
                    ax.plot([n for n, _ in pts], [v for _, v in pts], **style)
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_xlabel("objects in the working set, N (log)")
                ax.set_title(order)
                ax.grid(True, which="both", alpha=0.3)
            axes[0].set_ylabel("ns per allocate+free pair (log)")
            axes[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
            fig.suptitle("workset: {} B objects, allocate N, touch, free all, repeat".format(size))
            save(fig, outdir, "workset_{}B.png".format(size), charts)
    head = None
    for o, lo, hi in head_parts:
        note_ratio("workset", "pk_pool ÷ fastest peer, {}, best N".format(o), lo)
        note_ratio("workset", "pk_pool ÷ fastest peer, {}, worst N".format(o), hi)
    if head_parts:
        head = ("working sets (workset, {} B)".format(48 if 48 in sizes else sizes[0]),
                "pk_pool ÷ fastest peer, ns per pair, over N = {}–{} ({})".format(
                    fmt(counts[0]), fmt(counts[-1]), " / ".join(o for o, _, _ in head_parts)), "–",
                " / ".join("{}–{}".format(times(lo), times(hi)) for _, lo, hi in head_parts), "")
    return md, head


_COLORS = {}


def color(subject):
    """One colour per subject, the same in every chart (poolkit in blues/greens first)."""
    if subject not in _COLORS:
        palette = list(plt.get_cmap("tab10").colors) + list(plt.get_cmap("tab20").colors[1::2])
        _COLORS[subject] = palette[len(_COLORS) % len(palette)]
    return _COLORS[subject]


def save(fig, outdir, name, charts):
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, name), dpi=110)
    plt.close(fig)
    charts.append(name)


# ---- the report -----------------------------------------------------------

SECTIONS = [("autorelease-sweep", autorelease_sweep), ("alloc-styles", alloc_styles),
            ("common-ops", common_ops), ("object-generation", object_generation),
            ("pool-pattern", pool_pattern), ("peers", peers), ("threads", threads),
            ("binary-trees", binary_trees), ("workset", workset)]


def machine_line(d):
    m = d.get("machine", {})
    return "{} · {} cores · {} GiB · {} · {} · {}".format(
        m.get("cpu", "?"), m.get("cores", "?"), m.get("memory_gib", "?"), m.get("os", "?"),
        m.get("flags", m.get("compiler", "?")), m.get("poolkit", ""))


def main(argv):
    if len(argv) != 2:
        print("usage: report.py DIR/results.json", file=sys.stderr)
        return 2
    path = argv[1]
    with open(path) as f:
        data = json.load(f)
    res = Results(data)
    outdir = os.path.dirname(os.path.abspath(path))
    charts, heads, body = [], [], []
    for name, fn in SECTIONS:
        if name not in res.exps:
            continue
        try:
            md, head = fn(res, charts, outdir)
        except Exception as e:  # one broken section must not lose the report
            md, head = ["## " + name, "", "(this section failed: {}: {})".format(type(e).__name__, e), ""], None
        body += md
        if isinstance(head, list):
            heads += head
        elif head:
            heads.append(head)
    out = ["# poolkit lab report", "",
           "**Machine:** " + machine_line(data), "",
           "**Run:** `{}` · {} scale · {} repetitions (median shown) · {} · {:.0f} s".format(
               data.get("command", "pk-lab run"), data.get("scale", "?"), data.get("reps", "?"),
               data.get("date", ""), data.get("duration_s", 0)), ""]
    out += ["## Headline", "",
            table(["study", "the ratio that decides it", "published", "here", "verdict"],
                  [list(h) for h in heads]), ""]
    if charts:
        out += ["## Charts", ""] + ["![{}]({})".format(c[:-4].replace("_", " "), c) for c in charts] + [""]
    elif not HAVE_MPL:
        out += ["*(No charts: matplotlib is not available here ({}); run lab/run.sh, which "
                "installs it into the project's .venv.)*".format(MPL_WHY), ""]
    out += body
    out += ["---", "Method: warm-up, then repetitions with every contender interleaved; median and "
            "[min, max]; escape barriers keep the work; per-operation figures net of the empty "
            "loop where marked. Data: `results.json` (every row names what ran: version and flags)."]
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write("\n".join(out) + "\n")
    print("report: {} ({} charts)".format(os.path.join(outdir, "report.md"), len(charts)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
