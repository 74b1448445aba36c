"""The report's section for the common-ops experiment."""

from labreport import charts as chartlib
from labreport.common import fmt, note_ratio, ratio, spread, table, times


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
    if chartlib.HAVE_MPL:
        names = [op for op in COMMON_ORDER if op in measured or op in published]
        fig, ax = chartlib.plt.subplots(figsize=(9, 0.32 * len(names) + 1.5))
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
        chartlib.save(fig, outdir, "common_ops.png", charts)
    row = lambda op: measured.get(op)
    note_ratio("common-ops", "16-byte malloc/free ÷ C++ virtual call", ratio(mf, vc),
               spread(row("16-byte malloc/free"), row("C++ virtual method call")))
    note_ratio("common-ops", "malloc/free ÷ pool alloc/free", ratio(mf, pool),
               spread(row("16-byte malloc/free"), row("pk_pool alloc/free (16 B)")))
    head = ("Performance Comparisons of Common Operations (2007)",
            "16-byte malloc/free ÷ C++ virtual call", times(pub_mf_vc), times(ratio(mf, vc)),
            "pool alloc/free {} cheaper than malloc/free".format(times(ratio(mf, pool))) if pool else "")
    return md, head
