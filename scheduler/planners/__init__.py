"""The planners the event loop calls, one file each."""
