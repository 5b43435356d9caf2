"""The RLark platform's objects and rules, pure: typed views over the API dicts (`objects`), the names, labels and
keys the platform uses, placement, quantities, Pod states, lifecycle words, node and storage views.

No I/O anywhere in this package; callers pass API dicts in and get values out. Import each name from its module.
"""
