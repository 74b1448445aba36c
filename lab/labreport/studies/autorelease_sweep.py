"""The report's section for the autorelease-sweep experiment."""

from labreport import charts as chartlib
from labreport.common import (fmt, na_lines, note_ratio, pct, ratio, spread, table, times, verdict, with_range)


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
    md += na_lines(res, exp)
    # chart: ns per object against objects per pool
    if chartlib.HAVE_MPL:
        fig, ax = chartlib.plt.subplots(figsize=(8, 5))
        for s in subs:
            xs, ys = [], []
            for k in PER_POOL:
                v = res.med(exp, s, per_pool=k)
                if v:  # seconds per 1,000,000 objects
                    xs.append(k)
                    ys.append(v * 1e3)
            if xs:
                ax.plot(xs, ys, marker="o", label=s, color=chartlib.color(s))
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
        chartlib.save(fig, outdir, "autorelease_sweep.png", charts)
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
