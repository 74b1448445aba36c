"""The report's section for the alloc-styles experiment."""

from labreport.common import fmt, na_lines, note_ratio, ratio, spread, table, times, verdict


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
    md += na_lines(res, exp)
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
