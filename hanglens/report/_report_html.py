"""report.html.j2 compiled by jinja2 3.1.6 (tools/precompile_templates.py; generated, do not edit); fingerprint 280b3dff6d5e1aacf7a6adf4c2af8974c57e2aadea3ff0adb2fcefe8d3772b55"""; from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'report.html.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_csp = resolve('csp')
    l_0_version = resolve('version')
    l_0_category_title = resolve('category_title')
    l_0_n_culprits = resolve('n_culprits')
    l_0_culprits = resolve('culprits')
    l_0_command = resolve('command')
    l_0_category = resolve('category')
    l_0_verdict = resolve('verdict')
    l_0_confidence = resolve('confidence')
    l_0_culprit_hosts = resolve('culprit_hosts')
    l_0_n_suspects = resolve('n_suspects')
    l_0_suspects = resolve('suspects')
    l_0_n_victims = resolve('n_victims')
    l_0_victims = resolve('victims')
    l_0_observed = resolve('observed')
    l_0_silent = resolve('silent')
    l_0_first_step = resolve('first_step')
    l_0_first_snippets = resolve('first_snippets')
    l_0_collect = resolve('collect')
    l_0_findings = resolve('findings')
    l_0_overview = resolve('overview')
    l_0_overview_table = resolve('overview_table')
    l_0_timeline = resolve('timeline')
    l_0_timeline_timed = resolve('timeline_timed')
    l_0_clock = resolve('clock')
    l_0_timeline_svg = resolve('timeline_svg')
    l_0_timeline_more = resolve('timeline_more')
    l_0_disagreement = resolve('disagreement')
    l_0_collectives = resolve('collectives')
    l_0_versions = resolve('versions')
    l_0_ruled_out = resolve('ruled_out')
    l_0_not_evaluable = resolve('not_evaluable')
    l_0_unexplained = resolve('unexplained')
    l_0_steps = resolve('steps')
    l_0_inputs = resolve('inputs')
    l_0_schema_version = resolve('schema_version')
    l_0_script = resolve('script')
    try:
        t_1 = environment.filters['bytes']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'bytes' found.")
    try:
        t_2 = environment.filters['capfirst']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'capfirst' found.")
    try:
        t_3 = environment.filters['dictsort']
    except KeyError:
        @internalcode
        def t_3(*unused):
            raise TemplateRuntimeError("No filter named 'dictsort' found.")
    try:
        t_4 = environment.filters['format']
    except KeyError:
        @internalcode
        def t_4(*unused):
            raise TemplateRuntimeError("No filter named 'format' found.")
    try:
        t_5 = environment.filters['join']
    except KeyError:
        @internalcode
        def t_5(*unused):
            raise TemplateRuntimeError("No filter named 'join' found.")
    try:
        t_6 = environment.filters['length']
    except KeyError:
        @internalcode
        def t_6(*unused):
            raise TemplateRuntimeError("No filter named 'length' found.")
    try:
        t_7 = environment.filters['line1']
    except KeyError:
        @internalcode
        def t_7(*unused):
            raise TemplateRuntimeError("No filter named 'line1' found.")
    try:
        t_8 = environment.filters['prose']
    except KeyError:
        @internalcode
        def t_8(*unused):
            raise TemplateRuntimeError("No filter named 'prose' found.")
    try:
        t_9 = environment.filters['ranks']
    except KeyError:
        @internalcode
        def t_9(*unused):
            raise TemplateRuntimeError("No filter named 'ranks' found.")
    try:
        t_10 = environment.filters['rk']
    except KeyError:
        @internalcode
        def t_10(*unused):
            raise TemplateRuntimeError("No filter named 'rk' found.")
    try:
        t_11 = environment.filters['sort']
    except KeyError:
        @internalcode
        def t_11(*unused):
            raise TemplateRuntimeError("No filter named 'sort' found.")
    try:
        t_12 = environment.filters['where']
    except KeyError:
        @internalcode
        def t_12(*unused):
            raise TemplateRuntimeError("No filter named 'where' found.")
    try:
        t_13 = environment.tests['none']
    except KeyError:
        @internalcode
        def t_13(*unused):
            raise TemplateRuntimeError("No test named 'none' found.")
    try:
        t_14 = environment.tests['number']
    except KeyError:
        @internalcode
        def t_14(*unused):
            raise TemplateRuntimeError("No test named 'number' found.")
    pass
    yield '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<meta http-equiv="Content-Security-Policy" content="'
    yield escape((undefined(name='csp') if l_0_csp is missing else l_0_csp))
    yield '">\n<meta name="referrer" content="no-referrer">\n<meta name="viewport" content="width=device-width, initial-scale=1">\n<meta name="generator" content="hanglens '
    yield escape((undefined(name='version') if l_0_version is missing else l_0_version))
    yield '">\n<title>hanglens: '
    yield escape((undefined(name='category_title') if l_0_category_title is missing else l_0_category_title))
    if (undefined(name='n_culprits') if l_0_n_culprits is missing else l_0_n_culprits):
        pass
        yield ' — rank '
        yield escape((undefined(name='culprits') if l_0_culprits is missing else l_0_culprits))
    yield '</title>\n<style>\n:root {\n  --bg: #ffffff; --fg: #1d2330; --muted: #5b6474; --line: #dfe3ea; --panel: #f6f7f9; --code: #f1f3f6;\n  --culprit: #c62828; --culprit-bg: #fdecea; --failed: #e8710a; --failed-bg: #fff1e3;\n  --victim: #a67c00; --victim-bg: #fff8dc; --ok: #2e7d32; --ok-bg: #e8f5e9;\n  --silent: #7a7f8a; --silent-bg: #eceef2; --accent: #2453a6; --track: #eef0f4;\n  color-scheme: light dark;\n}\n@media (prefers-color-scheme: dark) {\n  :root {\n    --bg: #14171c; --fg: #e4e7ec; --muted: #9aa3b2; --line: #2c323c; --panel: #1b1f26; --code: #222832;\n    --culprit: #ff6b6b; --culprit-bg: #3a1d1f; --failed: #ffa44d; --failed-bg: #3a2a18;\n    --victim: #e6c229; --victim-bg: #353018; --ok: #66bb6a; --ok-bg: #1c2e1e;\n    --silent: #8d95a3; --silent-bg: #262a31; --accent: #7aa7ff; --track: #232831;\n  }\n}\n* { box-sizing: border-box; }\nbody { margin: 0; background: var(--bg); color: var(--fg);\n  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }\nmain { max-width: 1180px; margin: 0 auto; padding: 20px 28px 60px; }\nheader.top { display: flex; align-items: baseline; justify-content: space-between; gap: 16px;\n  border-bottom: 1px solid var(--line); padding-bottom: 8px; color: var(--muted); font-size: 13px; }\nheader.top b { color: var(--fg); letter-spacing: .02em; }\nnav.toc { font-size: 13px; margin: 6px 0 18px; color: var(--muted); }\nnav.toc a { color: var(--accent); text-decoration: none; margin-right: 12px; white-space: nowrap; }\nh1 { font-size: 30px; line-height: 1.2; margin: 6px 0 10px; }\nh2 { font-size: 20px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }\nh3 { font-size: 16px; margin: 18px 0 6px; }\na { color: var(--accent); }\ncode, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;\n  font-size: 13px; }\ncode { background: var(--code); padding: 1px 4px; border-radius: 3px; overflow-wrap: anywhere; }\npre { background: var(--code); padding: 10px 12px; border-radius: 6px; overflow-x: auto; margin: 6px 0;\n  white-space: pre-wrap; overflow-wrap: anywhere; }\npre code { background: none; padding: 0; }\n.muted { color: var(--muted); }\n.small { font-size: 13px; }\n.verdict { border: 1px solid var(--line); border-left: 8px solid var(--culprit); border-radius: 8px;\n  background: var(--panel); padding: 18px 22px; margin-top: 10px; }\n.verdict.cat-none { border-left-color: var(--ok); }\n.verdict.cat-unknown { border-left-color: var(--silent); }\n.verdict .kicker { text-transform: uppercase; letter-spacing: .08em; font-size: 12px; color: var(--muted); }\n.badge { display: inline-block; padding: 1px 9px; border-radius: 999px; font-size: 12px; font-weight: 600;\n  vertical-align: middle; border: 1px solid currentColor; }\n.conf-high { color: var(--ok); } .conf-medium { color: var(--failed); } .conf-low { color: var(--silent); }\n.who { display: grid; grid-template-columns: repeat(auto-fit, minmax(220px, 1fr)); gap: 10px; margin: 14px 0; }\n.who > div { background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; }\n.who .k { font-size: 12px; color: var(--muted); text-transform: uppercase; letter-spacing: .06em; }\n.who .v { font-size: 18px; font-weight: 600; overflow-wrap: anywhere; }\n.who .culprit .v { color: var(--culprit); } .who .victim .v { color: var(--victim); }\n.who .suspect .v, .st-suspect { color: var(--failed); }\n.summary { font-size: 16px; margin: 8px 0 12px; max-width: 80ch; }\n.firststep { background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; }\n.firststep .k { font-weight: 700; color: var(--accent); margin-right: 6px; }\n.legend span { display: inline-flex; align-items: center; gap: 5px; margin-right: 14px; font-size: 13px; }\n.sw { width: 12px; height: 12px; border-radius: 2px; display: inline-block; }\n.sw.st-culprit { background: var(--culprit); } .sw.st-failed { background: var(--failed); }\n.sw.st-victim { background: var(--victim); } .sw.st-ok { background: var(--ok); }\n.sw.st-silent { background: repeating-linear-gradient(45deg, var(--silent-bg) 0 3px, var(--silent) 3px 4px);\n  border: 1px solid var(--silent); }\nsvg { max-width: 100%; height: auto; display: block; }\nsvg text { fill: var(--fg); font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }\nsvg text.host { fill: var(--muted); }\ntable.rankmap td { padding: 3px 8px; vertical-align: middle; }\ntable.rankmap td.lbl { white-space: nowrap; font-weight: 600; }\ntable.rankmap td.host { color: var(--muted); overflow-wrap: anywhere; }\ntable.rankmap .barcol { width: 36%; min-width: 110px; }\ntable.rankmap .track { display: flex; height: 12px; background: var(--track); border-radius: 2px; overflow: hidden; }\ntable.rankmap .bar { display: block; height: 100%; }\n.bar.st-culprit { background: var(--culprit); } .bar.st-failed { background: var(--failed); }\n.bar.st-victim { background: var(--victim); } .bar.st-ok { background: var(--ok); }\n.bar.st-silent { background: repeating-linear-gradient(45deg, var(--silent-bg) 0 3px, var(--silent) 3px 4px); }\ntable.rankmap td.note { font-size: 13px; }\ntable.rankmap tr.st-culprit td.lbl, td.note.st-culprit { color: var(--culprit); font-weight: 700; }\ntd.note.st-failed { color: var(--failed); font-weight: 600; } td.note.st-silent { color: var(--silent); font-style: italic; }\n.timeline-table tr.meta td { border-bottom: none; padding-bottom: 0; }\n.timeline-table tr.line td { padding-top: 2px; }\ndetails.also { border: none; margin: 4px 0 0; background: none; font-family: system-ui, sans-serif; }\ndetails.also > summary { padding: 0; font-size: 12px; color: var(--muted); }\ndetails.also[open] > summary { border-bottom: none; }\ndetails.also ul { margin: 4px 0; padding-left: 18px; font-size: 12px; }\n@media (max-width: 820px) { main { padding: 12px 14px 40px; } h1 { font-size: 26px; } }\nsvg .lane { stroke: var(--line); } svg .dot { fill: var(--accent); stroke: var(--bg); }\nsvg text.axis { fill: var(--muted); }\n.scroll { overflow-x: auto; }\ntable { border-collapse: collapse; width: 100%; margin: 6px 0; font-size: 13.5px; }\nth, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }\nth { font-size: 12px; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); font-weight: 600; }\ntd.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }\ntd.odd, tr.odd td.lbl { background: var(--culprit-bg); color: var(--culprit); font-weight: 600; }\ntd.logtext { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px;\n  overflow-wrap: anywhere; }\n.st { font-weight: 600; }\n.st-culprit { color: var(--culprit); } .st-failed { color: var(--failed); } .st-victim { color: var(--victim); }\n.st-ok { color: var(--ok); } .st-silent { color: var(--silent); }\ndetails { border: 1px solid var(--line); border-radius: 6px; margin: 8px 0; background: var(--bg); }\ndetails > summary { cursor: pointer; padding: 8px 12px; list-style-position: outside; margin-left: 14px; }\ndetails[open] > summary { border-bottom: 1px solid var(--line); }\ndetails > .body { padding: 8px 12px; }\n.cite { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }\n.ctx { width: 100%; border-collapse: collapse; }\n.ctx td { border: none; padding: 1px 6px; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;\n  font-size: 12.5px; white-space: pre-wrap; overflow-wrap: anywhere; }\n.ctx td.n { color: var(--muted); text-align: right; width: 1%; white-space: nowrap; user-select: none; }\n.ctx tr.hit td { background: var(--culprit-bg); }\n.finding h3 { display: flex; gap: 10px; align-items: baseline; flex-wrap: wrap; }\n.superseded { opacity: .8; }\nol.steps li { margin: 6px 0 12px; }\n.snippet-wrap { position: relative; }\nbutton { font: inherit; font-size: 12px; border: 1px solid var(--line); background: var(--panel); color: var(--fg);\n  border-radius: 4px; padding: 2px 8px; cursor: pointer; }\nbutton.copy { float: right; margin: 4px 4px 0 0; }\ninput.filter { font: inherit; font-size: 13px; padding: 4px 8px; width: 320px; max-width: 100%;\n  border: 1px solid var(--line); border-radius: 4px; background: var(--bg); color: var(--fg); margin: 4px 0; }\n.kv { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; font-size: 14px; }\n.kv dt { color: var(--muted); } .kv dd { margin: 0; overflow-wrap: anywhere; }\nfooter { margin-top: 40px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--line);\n  padding-top: 8px; }\n@media print {\n  :root { --bg: #fff; --fg: #000; --panel: #fff; --code: #f4f4f4; }\n  body { font-size: 11pt; }\n  main { max-width: none; padding: 0; }\n  nav.toc, button, input.filter { display: none !important; }\n  details { break-inside: avoid; }\n  details > summary { list-style: none; }\n  .bar, .sw, .badge, td.odd { -webkit-print-color-adjust: exact; print-color-adjust: exact; }\n  details::details-content { content-visibility: visible; display: block; }\n  details:not([open]) > .body { display: block; }\n  h2 { break-after: avoid; }\n  a { color: inherit; text-decoration: none; }\n}\n</style>\n</head>\n<body>\n<main>\n<header class="top">\n  <span><b>hanglens</b> post-mortem report</span>\n  <span>hanglens '
    yield escape((undefined(name='version') if l_0_version is missing else l_0_version))
    yield ' · <span class="mono">'
    yield escape((undefined(name='command') if l_0_command is missing else l_0_command))
    yield '</span></span>\n</header>\n\n<section class="verdict cat-'
    yield escape((undefined(name='category') if l_0_category is missing else l_0_category))
    yield '" id="verdict" aria-label="Verdict">\n  <div class="kicker">Verdict · <span class="mono">'
    yield escape((undefined(name='category') if l_0_category is missing else l_0_category))
    yield '</span>'
    if environment.getattr((undefined(name='verdict') if l_0_verdict is missing else l_0_verdict), 'rule_id'):
        pass
        yield ' · rule <span class="mono">'
        yield escape(environment.getattr((undefined(name='verdict') if l_0_verdict is missing else l_0_verdict), 'rule_id'))
        yield '</span>'
    yield '</div>\n  <h1>'
    yield escape((undefined(name='category_title') if l_0_category_title is missing else l_0_category_title))
    yield ' <span class="badge conf-'
    yield escape((undefined(name='confidence') if l_0_confidence is missing else l_0_confidence))
    yield '">'
    yield escape((undefined(name='confidence') if l_0_confidence is missing else l_0_confidence))
    yield ' confidence</span></h1>\n  <div class="who">\n'
    if (undefined(name='n_culprits') if l_0_n_culprits is missing else l_0_n_culprits):
        pass
        yield '    <div class="culprit"><div class="k">Culprit '
        yield escape(('rank' if ((undefined(name='n_culprits') if l_0_n_culprits is missing else l_0_n_culprits) == 1) else 'ranks'))
        yield '</div><div class="v">'
        yield escape((undefined(name='culprits') if l_0_culprits is missing else l_0_culprits))
        yield '</div></div>\n    <div class="culprit"><div class="k">Culprit '
        yield escape(('host' if (t_6((environment.getattr((undefined(name='verdict') if l_0_verdict is missing else l_0_verdict), 'culprit_hosts') or [])) == 1) else 'hosts'))
        yield '</div><div class="v">'
        yield escape((undefined(name='culprit_hosts') if l_0_culprit_hosts is missing else l_0_culprit_hosts))
        yield '</div></div>\n'
    else:
        pass
        yield '    <div><div class="k">Culprit</div><div class="v muted">not identified</div></div>\n'
    if (undefined(name='n_suspects') if l_0_n_suspects is missing else l_0_n_suspects):
        pass
        yield '<div class="suspect"><div class="k">'
        yield escape(('Suspect' if ((undefined(name='n_suspects') if l_0_n_suspects is missing else l_0_n_suspects) == 1) else 'Suspects'))
        yield ' (no side decided)</div><div class="v">'
        yield escape((undefined(name='suspects') if l_0_suspects is missing else l_0_suspects))
        yield '</div></div>'
    yield '    <div class="victim"><div class="k">Victims ('
    yield escape((undefined(name='n_victims') if l_0_n_victims is missing else l_0_n_victims))
    yield ')</div><div class="v">'
    yield escape((undefined(name='victims') if l_0_victims is missing else l_0_victims))
    yield '</div></div>\n  </div>\n'
    if (undefined(name='observed') if l_0_observed is missing else l_0_observed):
        pass
        yield '<p class="summary"><b>Seen:</b> '
        yield escape(environment.getattr((undefined(name='observed') if l_0_observed is missing else l_0_observed), 'headline'))
        yield '. No rule explains it.</p>\n'
    elif environment.getattr((undefined(name='verdict') if l_0_verdict is missing else l_0_verdict), 'summary'):
        pass
        yield '<p class="summary">'
        yield escape(t_8(environment.getattr((undefined(name='verdict') if l_0_verdict is missing else l_0_verdict), 'summary')))
        yield '</p>'
    if environment.getattr((undefined(name='silent') if l_0_silent is missing else l_0_silent), 'rows'):
        pass
        yield '  <div class="silent" id="silent-hang"><p><b>'
        yield escape(environment.getattr((undefined(name='silent') if l_0_silent is missing else l_0_silent), 'heading'))
        yield '</b></p>\n  <div class="scroll"><table><thead><tr>'
        for l_1_col in environment.getattr((undefined(name='silent') if l_0_silent is missing else l_0_silent), 'columns'):
            _loop_vars = {}
            pass
            yield '<th>'
            yield escape(l_1_col)
            yield '</th>'
        l_1_col = missing
        yield '</tr></thead>\n  <tbody>'
        l_1_loop = missing
        for l_1_row, l_1_loop in LoopContext(environment.getattr((undefined(name='silent') if l_0_silent is missing else l_0_silent), 'rows'), undefined):
            _loop_vars = {}
            pass
            yield '<tr>'
            l_2_loop = missing
            for l_2_cell, l_2_loop in LoopContext(l_1_row, undefined):
                _loop_vars = {}
                pass
                yield '<td'
                if environment.getattr(l_2_loop, 'first'):
                    pass
                    yield ' class="mono"'
                yield '>'
                yield escape(l_2_cell)
                yield '</td>'
            l_2_loop = l_2_cell = missing
            yield '</tr>\n'
        l_1_loop = l_1_row = missing
        yield '</tbody></table></div>\n'
        if environment.getattr((undefined(name='silent') if l_0_silent is missing else l_0_silent), 'footer'):
            pass
            yield '<p class="small muted">'
            yield escape(environment.getattr((undefined(name='silent') if l_0_silent is missing else l_0_silent), 'footer'))
            yield '</p>'
        yield '</div>\n'
    if (undefined(name='first_step') if l_0_first_step is missing else l_0_first_step):
        pass
        yield '  <div class="firststep"><span class="k">First step:</span>'
        yield escape(t_8((undefined(name='first_step') if l_0_first_step is missing else l_0_first_step)))
        yield '\n'
        if (undefined(name='first_snippets') if l_0_first_snippets is missing else l_0_first_snippets):
            pass
            yield '<div class="snippet-wrap"><pre class="snippet" aria-label="shell commands"><code>'
            yield escape(t_5(context.eval_ctx, (undefined(name='first_snippets') if l_0_first_snippets is missing else l_0_first_snippets), '\n'))
            yield '</code></pre></div>'
        yield '  </div>\n'
    if (((undefined(name='category') if l_0_category is missing else l_0_category) in ('none', 'unknown')) and (undefined(name='collect') if l_0_collect is missing else l_0_collect)):
        pass
        yield '  <p><b>Collect on the rerun:</b> '
        yield escape(t_8(environment.getitem((undefined(name='collect') if l_0_collect is missing else l_0_collect), 0)))
        if (t_6((undefined(name='collect') if l_0_collect is missing else l_0_collect)) > 1):
            pass
            yield ' (and '
            yield escape((t_6((undefined(name='collect') if l_0_collect is missing else l_0_collect)) - 1))
            yield ' more, <a href="#remediation">see below</a>)'
        yield '</p>\n'
    yield '</section>\n\n<nav class="toc" aria-label="Sections">\n  <a href="#evidence">Evidence</a><a href="#ranks">Ranks</a><a href="#timeline">Timeline</a>\n  <a href="#collective">Collective</a><a href="#versions">Versions</a><a href="#ruled-out">Ruled out</a>\n  <a href="#unexplained">Unexplained lines</a><a href="#remediation">Remediation</a><a href="#inputs">Inputs</a>\n  <a href="#rerun">Rerun</a>\n  <button type="button" id="toggle-all" hidden aria-pressed="false">Expand all</button>\n</nav>\n\n<h2 id="evidence">Evidence</h2>\n'
    if (not (undefined(name='findings') if l_0_findings is missing else l_0_findings)):
        pass
        yield '<p class="muted">No rule matched, so no line is cited. See <a href="#unexplained">unexplained lines</a> and <a href="#remediation">what to collect</a>.</p>\n'
    l_1_loop = missing
    for l_1_f, l_1_loop in LoopContext((undefined(name='findings') if l_0_findings is missing else l_0_findings), undefined):
        _loop_vars = {}
        pass
        yield '<div class="finding'
        if environment.getattr(l_1_f, 'superseded_by'):
            pass
            yield ' superseded'
        yield '">\n  <h3>'
        yield escape(environment.getattr(l_1_f, 'title'))
        yield ' <span class="badge conf-'
        yield escape(environment.getattr(l_1_f, 'confidence'))
        yield '">'
        yield escape(environment.getattr(l_1_f, 'confidence'))
        yield '</span> <span class="muted small mono">'
        yield escape(environment.getattr(l_1_f, 'rule_id'))
        yield '</span>'
        if environment.getattr(l_1_f, 'superseded_by'):
            pass
            yield ' <span class="muted small">superseded by <span class="mono">'
            yield escape(environment.getattr(l_1_f, 'superseded_by'))
            yield '</span></span>'
        yield '</h3>\n'
        if environment.getattr(l_1_f, 'explanation'):
            pass
            yield '<p>'
            yield escape(t_8(environment.getattr(l_1_f, 'explanation')))
            yield '</p>'
        if ((environment.getattr(l_1_f, 'culprit_ranks') or environment.getattr(l_1_f, 'victim_ranks')) or context.call(environment.getattr(l_1_f, 'get'), 'suspect_ranks', _loop_vars=_loop_vars)):
            pass
            yield '<p class="small">Culprits: <span class="st st-culprit">'
            yield escape(t_9(environment.getattr(l_1_f, 'culprit_ranks')))
            yield '</span>'
            if context.call(environment.getattr(l_1_f, 'get'), 'suspect_ranks', _loop_vars=_loop_vars):
                pass
                yield ' · suspects: <span class="st st-suspect">'
                yield escape(t_9(environment.getattr(l_1_f, 'suspect_ranks')))
                yield '</span>'
            yield ' · victims: <span class="st st-victim">'
            yield escape(t_9(environment.getattr(l_1_f, 'victim_ranks')))
            yield '</span></p>'
        l_2_loop = missing
        for l_2_ev, l_2_loop in LoopContext(environment.getattr(l_1_f, 'evidence_rows'), undefined):
            _loop_vars = {}
            pass
            yield '  <details'
            if (environment.getattr(l_1_f, 'primary') and (environment.getattr(l_2_loop, 'index') <= 3)):
                pass
                yield ' open'
            yield '>\n    <summary><span class="cite">'
            yield escape(t_12(l_2_ev))
            yield '</span>'
            if (t_10(environment.getattr(l_2_ev, 'rank')) != '?'):
                pass
                yield ' · rank '
                yield escape(t_10(environment.getattr(l_2_ev, 'rank')))
            if environment.getattr(l_2_ev, 'host'):
                pass
                yield ' · '
                yield escape(environment.getattr(l_2_ev, 'host'))
            if environment.getattr(l_2_ev, 'time_text'):
                pass
                yield ' · '
                yield escape(environment.getattr(l_2_ev, 'time_text'))
            yield '<br><span class="cite muted">'
            yield escape(t_7(environment.getattr(l_2_ev, 'text'), 160))
            yield '</span></summary>\n    <div class="body scroll"><table class="ctx">\n'
            for (l_3_n, l_3_text, l_3_hit) in environment.getattr(l_2_ev, 'rows'):
                _loop_vars = {}
                pass
                yield '<tr'
                if l_3_hit:
                    pass
                    yield ' class="hit"'
                yield '><td class="n">'
                yield escape(('' if t_13(l_3_n) else l_3_n))
                yield '</td><td>'
                yield escape(l_3_text)
                yield '</td></tr>\n'
            l_3_n = l_3_text = l_3_hit = missing
            yield '    </table></div>\n  </details>\n'
        l_2_loop = l_2_ev = missing
        yield '</div>\n'
    l_1_loop = l_1_f = missing
    yield '\n<h2 id="ranks">Ranks</h2>\n<p class="legend">'
    for (l_1_s, l_1_n) in environment.getattr((undefined(name='overview') if l_0_overview is missing else l_0_overview), 'status_counts'):
        _loop_vars = {}
        pass
        yield '<span><i class="sw st-'
        yield escape(l_1_s)
        yield '"></i>'
        yield escape(l_1_n)
        yield ' '
        yield escape(environment.getitem({'culprit': 'culprit', 'failed': 'failed', 'victim': 'victim', 'ok': 'ok', 'silent': 'silent (no log)'}, l_1_s))
        yield '</span>'
    l_1_s = l_1_n = missing
    yield '</p>\n'
    if (undefined(name='overview_table') if l_0_overview_table is missing else l_0_overview_table):
        pass
        yield '<p class="small muted">'
        yield escape(environment.getattr((undefined(name='overview') if l_0_overview is missing else l_0_overview), 'total_ranks'))
        yield ' ranks in '
        yield escape(t_6(environment.getattr((undefined(name='overview') if l_0_overview is missing else l_0_overview), 'rows')))
        yield ' rows'
        if (environment.getattr((undefined(name='overview') if l_0_overview is missing else l_0_overview), 'mode') == 'exact'):
            pass
            yield '; consecutive ranks in the same state share a row'
        elif (environment.getattr((undefined(name='overview') if l_0_overview is missing else l_0_overview), 'mode') == 'status'):
            pass
            yield '; consecutive ranks with the same status share a row (progress differs within a row)'
        else:
            pass
            yield '; fixed blocks of ranks, each bar split by status'
        yield '. Bar length: '
        yield escape(environment.getattr((undefined(name='overview') if l_0_overview is missing else l_0_overview), 'measure'))
        yield '.</p>\n<div class="scroll">'
        yield escape((undefined(name='overview_table') if l_0_overview_table is missing else l_0_overview_table))
        yield '</div>\n'
    else:
        pass
        yield '<p class="muted">No rank could be attributed.</p>\n'
    yield '\n<h2 id="timeline">Timeline of first failures</h2>\n'
    if (undefined(name='timeline') if l_0_timeline is missing else l_0_timeline):
        pass
        yield '<p class="small muted">'
        if (undefined(name='timeline_timed') if l_0_timeline_timed is missing else l_0_timeline_timed):
            pass
            yield 'Times on the normalised clock, relative to the first failure. '
            yield escape(t_2((environment.getattr((undefined(name='clock') if l_0_clock is missing else l_0_clock), 'note') or '')))
        else:
            pass
            yield 'No failure line carried a time; rows are in the order the logs show them.'
        if environment.getattr((undefined(name='clock') if l_0_clock is missing else l_0_clock), 'offsets'):
            pass
            yield ' Offsets applied per host:\n'
            l_1_loop = missing
            for (l_1_h, l_1_o), l_1_loop in LoopContext(t_3(environment.getattr((undefined(name='clock') if l_0_clock is missing else l_0_clock), 'offsets')), undefined):
                _loop_vars = {}
                pass
                yield '<span class="mono">'
                yield escape(l_1_h)
                yield '</span> '
                yield escape((t_4('%+.3f', l_1_o) if t_14(l_1_o) else l_1_o))
                yield ' s'
                if (not environment.getattr(l_1_loop, 'last')):
                    pass
                    yield ', '
            l_1_loop = l_1_h = l_1_o = missing
            yield '.'
        yield '</p>\n'
        if (undefined(name='timeline_svg') if l_0_timeline_svg is missing else l_0_timeline_svg):
            pass
            yield '<div class="scroll">'
            yield escape((undefined(name='timeline_svg') if l_0_timeline_svg is missing else l_0_timeline_svg))
            yield '</div>'
        yield '<div class="scroll"><table class="filterable timeline-table">\n<thead><tr>'
        if (undefined(name='timeline_timed') if l_0_timeline_timed is missing else l_0_timeline_timed):
            pass
            yield '<th>t</th><th>time</th>'
        yield '<th>host</th><th>rank</th><th>kind</th><th>source</th></tr></thead>\n'
        for l_1_t in (undefined(name='timeline') if l_0_timeline is missing else l_0_timeline):
            _loop_vars = {}
            pass
            yield '<tbody class="fact">\n<tr class="meta">'
            if (undefined(name='timeline_timed') if l_0_timeline_timed is missing else l_0_timeline_timed):
                pass
                yield '<td class="num">'
                yield escape(environment.getattr(l_1_t, 'rel'))
                yield '</td><td class="mono small">'
                yield escape(environment.getattr(l_1_t, 'time_text'))
                yield '</td>'
            yield '<td>'
            yield escape((environment.getattr(l_1_t, 'host') or '—'))
            yield '</td><td class="num">'
            yield escape(('—' if t_13(environment.getattr(l_1_t, 'rank')) else environment.getattr(l_1_t, 'rank')))
            yield '</td><td class="mono">'
            yield escape(environment.getattr(l_1_t, 'kind'))
            yield '</td><td class="cite">'
            yield escape(environment.getattr(l_1_t, 'where'))
            yield '</td></tr>\n<tr class="line"><td colspan="'
            yield escape((6 if (undefined(name='timeline_timed') if l_0_timeline_timed is missing else l_0_timeline_timed) else 4))
            yield '" class="logtext">'
            yield escape(t_7(environment.getattr(l_1_t, 'text'), 400))
            if environment.getattr(l_1_t, 'also'):
                pass
                yield '<details class="also"><summary>'
                yield escape(t_6(environment.getattr(l_1_t, 'also')))
                yield ' more line'
                yield escape(('s' if (t_6(environment.getattr(l_1_t, 'also')) > 1) else cond_expr_undefined("the inline if-expression on line 230 in 'report.html.j2' evaluated to false and no else section was defined.")))
                yield ' about this fact</summary><ul>'
                for l_2_a in environment.getattr(l_1_t, 'also'):
                    _loop_vars = {}
                    pass
                    yield '<li><span class="mono">'
                    yield escape(environment.getattr(l_2_a, 'kind'))
                    yield '</span>'
                    if (not t_13(environment.getattr(l_2_a, 'rank'))):
                        pass
                        yield ' rank '
                        yield escape(environment.getattr(l_2_a, 'rank'))
                    yield ' · <span class="cite">'
                    yield escape(environment.getattr(l_2_a, 'where'))
                    yield '</span>: '
                    yield escape(t_7(environment.getattr(l_2_a, 'text'), 200))
                    yield '</li>'
                l_2_a = missing
                yield '</ul></details>'
            yield '</td></tr>\n</tbody>'
        l_1_t = missing
        yield '</table></div>\n'
        if (undefined(name='timeline_more') if l_0_timeline_more is missing else l_0_timeline_more):
            pass
            yield '<p class="muted small">'
            yield escape((undefined(name='timeline_more') if l_0_timeline_more is missing else l_0_timeline_more))
            yield ' later facts not shown (see the JSON output).</p>'
    else:
        pass
        yield '<p class="muted">No failure event carried a time.</p>\n'
    yield '\n<h2 id="collective">The collective where ranks disagree or stopped</h2>\n'
    if (undefined(name='disagreement') if l_0_disagreement is missing else l_0_disagreement):
        pass
        yield '<p>Process group <span class="mono">'
        yield escape(environment.getattr((undefined(name='disagreement') if l_0_disagreement is missing else l_0_disagreement), 'pg'))
        yield '</span>, collective #'
        yield escape(environment.getattr((undefined(name='disagreement') if l_0_disagreement is missing else l_0_disagreement), 'seq'))
        yield '. Differs in: '
        l_1_loop = missing
        t_15 = 1
        for l_1_d, l_1_loop in LoopContext(environment.getattr((undefined(name='disagreement') if l_0_disagreement is missing else l_0_disagreement), 'differs'), undefined):
            _loop_vars = {}
            pass
            yield '<b>'
            yield escape(l_1_d)
            yield '</b>'
            if (not environment.getattr(l_1_loop, 'last')):
                pass
                yield ', '
            t_15 = 0
        l_1_loop = l_1_d = missing
        if t_15:
            pass
            yield 'nothing'
        yield '. Cells that differ from most ranks are highlighted.</p>\n<div class="scroll"><table class="filterable">\n<thead><tr><th>ranks</th>'
        for l_1_col in environment.getattr((undefined(name='disagreement') if l_0_disagreement is missing else l_0_disagreement), 'cols'):
            _loop_vars = {}
            pass
            yield '<th>'
            yield escape(l_1_col)
            yield '</th>'
        l_1_col = missing
        yield '</tr></thead>\n<tbody>\n'
        for l_1_r in environment.getattr((undefined(name='disagreement') if l_0_disagreement is missing else l_0_disagreement), 'rows'):
            _loop_vars = {}
            pass
            yield '<tr'
            if environment.getattr(l_1_r, 'odd'):
                pass
                yield ' class="odd"'
            yield '><td class="lbl mono">'
            yield escape(environment.getattr(l_1_r, 'label'))
            yield '</td>'
            for l_2_cell in environment.getattr(l_1_r, 'cells'):
                _loop_vars = {}
                pass
                yield '<td class="mono'
                if environment.getattr(l_2_cell, 'odd'):
                    pass
                    yield ' odd'
                yield '">'
                yield escape(('—' if t_13(environment.getattr(l_2_cell, 'value')) else environment.getattr(l_2_cell, 'value')))
                yield '</td>'
            l_2_cell = missing
            yield '</tr>\n'
        l_1_r = missing
        yield '</tbody></table></div>\n'
        if environment.getattr((undefined(name='disagreement') if l_0_disagreement is missing else l_0_disagreement), 'more'):
            pass
            yield '<p class="muted small">'
            yield escape(environment.getattr((undefined(name='disagreement') if l_0_disagreement is missing else l_0_disagreement), 'more'))
            yield ' more rows not shown.</p>'
    else:
        pass
        yield '<p class="muted">No two ranks were seen disagreeing on one collective.</p>\n'
    if environment.getattr((undefined(name='collectives') if l_0_collectives is missing else l_0_collectives), 'rows'):
        pass
        yield '<details><summary>Last collective per rank ('
        yield escape(environment.getattr((undefined(name='collectives') if l_0_collectives is missing else l_0_collectives), 'total'))
        yield ' rows, '
        yield escape(t_6(environment.getattr((undefined(name='collectives') if l_0_collectives is missing else l_0_collectives), 'rows')))
        yield ' groups)</summary>\n<div class="body scroll"><table class="filterable">\n<thead><tr><th>pg</th><th>ranks</th><th>seq</th><th>op</th><th>numel in</th><th>numel out</th><th>state</th></tr></thead>\n<tbody>\n'
        for l_1_r in environment.getattr((undefined(name='collectives') if l_0_collectives is missing else l_0_collectives), 'rows'):
            _loop_vars = {}
            pass
            yield '<tr><td class="mono">'
            yield escape(environment.getattr(l_1_r, 'pg'))
            yield '</td><td class="mono">'
            yield escape(environment.getattr(l_1_r, 'label'))
            yield '</td><td class="num">'
            yield escape(environment.getattr(l_1_r, 'seq'))
            yield '</td><td class="mono">'
            yield escape(environment.getattr(l_1_r, 'op'))
            yield '</td><td class="num">'
            yield escape(environment.getattr(l_1_r, 'numel_in'))
            yield '</td><td class="num">'
            yield escape(environment.getattr(l_1_r, 'numel_out'))
            yield '</td><td>'
            yield escape(environment.getattr(l_1_r, 'state'))
            yield '</td></tr>\n'
        l_1_r = missing
        yield '</tbody></table>\n'
        if environment.getattr((undefined(name='collectives') if l_0_collectives is missing else l_0_collectives), 'more'):
            pass
            yield '<p class="muted small">'
            yield escape(environment.getattr((undefined(name='collectives') if l_0_collectives is missing else l_0_collectives), 'more'))
            yield ' more groups not shown.</p>'
        yield '</div></details>\n'
    yield '\n<h2 id="versions">Versions per host</h2>\n'
    if environment.getattr((undefined(name='versions') if l_0_versions is missing else l_0_versions), 'rows'):
        pass
        yield '<div class="scroll"><table class="filterable">\n<thead><tr><th>hosts</th>'
        for l_1_comp in environment.getattr((undefined(name='versions') if l_0_versions is missing else l_0_versions), 'comps'):
            _loop_vars = {}
            pass
            yield '<th>'
            yield escape(l_1_comp)
            yield '</th>'
        l_1_comp = missing
        yield '</tr></thead>\n<tbody>\n'
        l_1_loop = missing
        for l_1_r, l_1_loop in LoopContext(environment.getattr((undefined(name='versions') if l_0_versions is missing else l_0_versions), 'rows'), undefined):
            _loop_vars = {}
            pass
            yield '<tr><td>'
            yield escape(environment.getattr(l_1_r, 'hosts'))
            if (environment.getattr(l_1_r, 'count') > 1):
                pass
                yield ' <span class="muted small">('
                yield escape(environment.getattr(l_1_r, 'count'))
                yield ' hosts)</span>'
            yield '</td>'
            l_2_loop = missing
            for l_2_v, l_2_loop in LoopContext(environment.getitem(l_1_r, 'values'), undefined):
                _loop_vars = {}
                pass
                yield '<td class="mono'
                if (environment.getitem(environment.getattr((undefined(name='versions') if l_0_versions is missing else l_0_versions), 'comps'), environment.getattr(l_2_loop, 'index0')) in environment.getattr((undefined(name='versions') if l_0_versions is missing else l_0_versions), 'mixed')):
                    pass
                    yield ' odd'
                yield '">'
                yield escape((l_2_v or '—'))
                yield '</td>'
            l_2_loop = l_2_v = missing
            yield '</tr>\n'
        l_1_loop = l_1_r = missing
        yield '</tbody></table></div>\n'
        if environment.getattr((undefined(name='versions') if l_0_versions is missing else l_0_versions), 'mixed'):
            pass
            yield '<p>Versions differ across the job: '
            l_1_loop = missing
            for l_1_comp, l_1_loop in LoopContext(t_11(environment, environment.getattr((undefined(name='versions') if l_0_versions is missing else l_0_versions), 'mixed')), undefined):
                _loop_vars = {}
                pass
                yield '<b>'
                yield escape(l_1_comp)
                yield '</b> ('
                yield escape(t_5(context.eval_ctx, environment.getitem(environment.getattr((undefined(name='versions') if l_0_versions is missing else l_0_versions), 'distinct'), l_1_comp), ', '))
                yield ')'
                if (not environment.getattr(l_1_loop, 'last')):
                    pass
                    yield '; '
            l_1_loop = l_1_comp = missing
            yield '.</p>'
    else:
        pass
        yield '<p class="muted">No log stated a torch, NCCL, CUDA or driver version.</p>\n'
    yield '\n<h2 id="ruled-out">Hypotheses ruled out</h2>\n'
    if (undefined(name='ruled_out') if l_0_ruled_out is missing else l_0_ruled_out):
        pass
        yield '<table><thead><tr><th>hypothesis</th><th>category</th><th>why not</th></tr></thead><tbody>\n'
        for l_1_r in (undefined(name='ruled_out') if l_0_ruled_out is missing else l_0_ruled_out):
            _loop_vars = {}
            pass
            yield '<tr><td>'
            yield escape(environment.getattr(l_1_r, 'title'))
            yield ' <span class="muted small mono">'
            yield escape(environment.getattr(l_1_r, 'rule_id'))
            yield '</span></td><td class="mono small">'
            yield escape(environment.getattr(l_1_r, 'category'))
            yield '</td><td>'
            yield escape(t_8(environment.getattr(l_1_r, 'why')))
            yield '</td></tr>\n'
        l_1_r = missing
        yield '</tbody></table>\n'
    else:
        pass
        yield '<p class="muted">No hypothesis was ruled out explicitly.</p>'
    if (undefined(name='not_evaluable') if l_0_not_evaluable is missing else l_0_not_evaluable):
        pass
        yield '<details class="not-evaluable"><summary>Not evaluable: '
        yield escape(t_6((undefined(name='not_evaluable') if l_0_not_evaluable is missing else l_0_not_evaluable)))
        yield ' hypotheses need data these logs lack</summary>\n<div class="body scroll"><table><thead><tr><th>hypothesis</th><th>missing</th></tr></thead><tbody>\n'
        for l_1_r in (undefined(name='not_evaluable') if l_0_not_evaluable is missing else l_0_not_evaluable):
            _loop_vars = {}
            pass
            yield '<tr><td>'
            yield escape(environment.getattr(l_1_r, 'title'))
            yield ' <span class="muted small mono">'
            yield escape(environment.getattr(l_1_r, 'rule_id'))
            yield '</span></td><td class="mono small">'
            yield escape(t_5(context.eval_ctx, (environment.getattr(l_1_r, 'missing') or []), ', '))
            yield '</td></tr>\n'
        l_1_r = missing
        yield '</tbody></table></div></details>\n'
    yield '\n<h2 id="unexplained">Error-looking lines no rule explained</h2>\n'
    if (undefined(name='unexplained') if l_0_unexplained is missing else l_0_unexplained):
        pass
        yield '<div class="scroll"><table class="filterable">\n<thead><tr><th>count</th><th>template</th><th>ranks</th><th>example</th></tr></thead>\n<tbody>\n'
        for l_1_u in (undefined(name='unexplained') if l_0_unexplained is missing else l_0_unexplained):
            _loop_vars = {}
            pass
            yield '<tr><td class="num">'
            yield escape(environment.getattr(l_1_u, 'count'))
            yield '</td><td class="logtext">'
            yield escape(t_7(environment.getattr(l_1_u, 'template'), 200))
            yield '</td><td class="mono small">'
            yield escape(t_9((environment.getattr(l_1_u, 'ranks') or [])))
            yield '</td><td class="logtext">'
            yield escape(t_7(environment.getattr(l_1_u, 'example'), 240))
            yield '<br><span class="cite muted">'
            yield escape(t_12(l_1_u))
            yield '</span></td></tr>\n'
        l_1_u = missing
        yield '</tbody></table></div>\n'
    else:
        pass
        yield '<p class="muted">Every error-looking line was explained by a rule (or there were none).</p>'
    yield '\n<h2 id="remediation">Remediation</h2>\n'
    if (undefined(name='steps') if l_0_steps is missing else l_0_steps):
        pass
        yield '<ol class="steps">\n'
        for l_1_s in (undefined(name='steps') if l_0_steps is missing else l_0_steps):
            _loop_vars = {}
            pass
            yield '<li>'
            yield escape(t_8(environment.getattr(l_1_s, 'text')))
            if environment.getattr(l_1_s, 'snippets'):
                pass
                yield '<div class="snippet-wrap"><pre class="snippet"><code>'
                yield escape(t_5(context.eval_ctx, environment.getattr(l_1_s, 'snippets'), '\n'))
                yield '</code></pre></div>'
            yield '</li>\n'
        l_1_s = missing
        yield '</ol>\n'
    else:
        pass
        yield '<p class="muted">No remediation: no rule matched.</p>'
    if (undefined(name='collect') if l_0_collect is missing else l_0_collect):
        pass
        yield '<h3>What to collect next</h3>\n<ul>'
        for l_1_item in (undefined(name='collect') if l_0_collect is missing else l_0_collect):
            _loop_vars = {}
            pass
            yield '<li>'
            yield escape(t_8(l_1_item))
            yield '</li>'
        l_1_item = missing
        yield '</ul>\n'
    yield '\n<h2 id="inputs">Inputs</h2>\n<dl class="kv">\n  <dt>files read</dt><dd>'
    yield escape((environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'files') if (not t_13(environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'files'))) else '?'))
    yield ' ('
    yield escape(t_1(environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'bytes')))
    yield ')</dd>\n  <dt>world size</dt><dd>'
    if (not t_13(environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'world_size'))):
        pass
        yield escape(environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'world_size'))
    else:
        pass
        yield escape((environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'world_size_note') or 'not stated in the logs'))
    yield '</dd>\n  <dt>ranks seen</dt><dd>'
    yield escape(environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'n_ranks_seen'))
    yield ': '
    yield escape(environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'ranks_seen'))
    yield '</dd>\n  <dt>hosts</dt><dd>'
    yield escape(environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'n_hosts'))
    yield ': '
    yield escape(environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'hosts'))
    yield '</dd>\n  <dt>skipped</dt><dd>'
    yield escape(t_6(environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'skipped')))
    yield '</dd>\n</dl>\n'
    if environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'skipped'):
        pass
        yield '<table><thead><tr><th>skipped input</th><th>reason</th></tr></thead><tbody>\n'
        for l_1_s in environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'skipped'):
            _loop_vars = {}
            pass
            yield '<tr><td class="cite">'
            yield escape(environment.getattr(l_1_s, 'path'))
            yield '</td><td>'
            yield escape(environment.getattr(l_1_s, 'reason'))
            yield '</td></tr>\n'
        l_1_s = missing
        yield '</tbody></table>\n'
    if environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'detail'):
        pass
        yield '<details><summary>Files read ('
        yield escape((t_6(environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'detail')) + environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'detail_more')))
        yield ')</summary>\n<div class="body scroll"><table class="filterable">\n<thead><tr><th>path</th><th>size</th><th>lines</th><th>events</th><th>ranks</th><th>hosts</th></tr></thead>\n<tbody>\n'
        for l_1_d in environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'detail'):
            _loop_vars = {}
            pass
            yield '<tr><td class="cite">'
            yield escape(environment.getattr(l_1_d, 'path'))
            yield '</td><td class="num">'
            yield escape(t_1(environment.getattr(l_1_d, 'size')))
            yield '</td><td class="num">'
            yield escape(environment.getattr(l_1_d, 'lines'))
            yield '</td><td class="num">'
            yield escape(environment.getattr(l_1_d, 'events'))
            yield '</td><td class="mono small">'
            yield escape(t_9((environment.getattr(l_1_d, 'ranks') or [])))
            yield '</td><td class="small">'
            yield escape(t_5(context.eval_ctx, (environment.getattr(l_1_d, 'hosts') or []), ', '))
            yield '</td></tr>\n'
        l_1_d = missing
        yield '</tbody></table>\n'
        if environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'detail_more'):
            pass
            yield '<p class="muted small">'
            yield escape(environment.getattr((undefined(name='inputs') if l_0_inputs is missing else l_0_inputs), 'detail_more'))
            yield ' more files not shown.</p>'
        yield '</div></details>\n'
    yield '\n<h2 id="rerun">How to rerun</h2>\n<div class="snippet-wrap"><pre class="snippet"><code>'
    yield escape((undefined(name='command') if l_0_command is missing else l_0_command))
    yield '</code></pre></div>\n<p class="small muted">hanglens '
    yield escape((undefined(name='version') if l_0_version is missing else l_0_version))
    yield ' · analysis schema '
    yield escape((undefined(name='schema_version') if l_0_schema_version is missing else l_0_schema_version))
    yield '. Add <code>--format json</code> for the full analysis, <code>--html FILE</code> / <code>--markdown FILE</code> for reports, <code>--redact</code> before sharing outside your organisation.</p>\n\n<footer>Generated by hanglens '
    yield escape((undefined(name='version') if l_0_version is missing else l_0_version))
    yield '. This page makes no network request; every log excerpt is shown as text.</footer>\n</main>\n<script>'
    yield escape((undefined(name='script') if l_0_script is missing else l_0_script))
    yield '</script>\n</body>\n</html>\n'

blocks = {}
debug_info = '5=133&8=135&9=137&147=143&150=147&151=149&152=157&154=163&155=166&156=170&160=177&161=185&163=189&164=194&165=199&166=202&167=204&168=213&170=232&172=238&173=241&174=243&177=249&178=252&191=260&194=264&195=268&196=272&197=286&198=291&199=305&200=309&201=313&203=330&212=348&213=360&214=363&215=379&221=385&222=388&223=399&224=413&226=419&227=423&228=427&229=443&230=449&233=473&239=482&240=485&242=506&244=514&247=538&251=546&252=549&256=553&259=573&264=580&266=583&268=592&271=618&277=639&279=642&283=659&284=662&286=664&292=677&296=680&302=700&304=703&308=719&310=722&315=731&316=735&317=742&318=746&319=750&321=752&323=755&327=765&328=768&332=770&335=788&340=795&341=797&343=801&345=803'
