"""The report's section for the object-generation experiment."""

from labreport.common import (fmt, na_lines, note_ratio, ratio, spread, table, times, verdict, with_range)


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
    md += na_lines(res, exp)
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
