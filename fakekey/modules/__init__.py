"""The emulated modules: EMQ's verbs."""
