"""The Textual app: the screen stack, the reconciler's worker, the palette and `:` commands (app), the console views'
part of it (console) and the workers that do what screens ask of the disk, `$EDITOR` and the platform (work).
"""
