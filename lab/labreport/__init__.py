"""lab/report.py's parts: common.py (numbers and tables), charts.py (the
plotting helper), studies/ (one section per experiment)."""
