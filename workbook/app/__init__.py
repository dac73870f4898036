"""The widget layer: the only package that imports ipywidgets. Controls -> Scenario -> frames -> charts."""
