"""The report's section for the heap experiment (a request's blocks freed one by one or all at once)."""

from labreport.common import extra, fmt, na_lines, note_ratio, run_params, table, times

EXP = "heap"
PK_ROWS = ["poolkit pk_heap destroy", "poolkit pk_heap reset"]


def heap(res, charts, outdir):
    p = run_params(res, EXP)
    md = ["## heap: a request's blocks freed one by one or all at once", "",
          "A request allocates {} blocks of {}-{} B, frees about a third of them one by one on the way, "
          "and the rest at its end: with free (glibc), pk_heap_destroy or pk_heap_reset, "
          "mi_heap_destroy (mimalloc 3), talloc_free of the context, apr_pool_clear (APR frees no "
          "single block). ns per request (lower is better), median (min – max) of the "
          "repetitions.".format(fmt(p.get("blocks")), fmt(p.get("min_size")), fmt(p.get("max_size"))), ""]
    body = []
    for s in res.subjects(EXP):
        r = res.find(EXP, s)
        if r and r.get("available"):
            body.append([s, "{} ({} – {})".format(fmt(r["median"]), fmt(r["min"]), fmt(r["max"]))])
    md += [table(["allocator", "ns per request"], body), ""]
    heads = []
    for s in PK_ROWS:
        r = res.find(EXP, s)
        vh, vm = extra(r, "vs_mi3_heap"), extra(r, "vs_malloc")
        met = vh is not None and vm is not None and vh <= 1.0 and vm <= 0.3
        md += ["**Target** ({}): at most 1.0× mimalloc 3's heap and 0.3× malloc+free one by one, medians "
               "of the repetitions' ratios: {} and {} → {}.".format(s, times(vh), times(vm),
                                                                    "met" if met else "not met"), ""]
        note_ratio(EXP, s + " ÷ mimalloc 3's heap", vh)
        if vh is not None:
            heads.append(("heap ({})".format(s), "÷ mimalloc 3's heap, ns per request (target: ≤ 1.0×; "
                          "÷ malloc+free {}, target ≤ 0.3×)".format(times(vm)), "–", times(vh),
                          "met" if met else "not met"))
    md += na_lines(res, EXP)
    return md, heads
