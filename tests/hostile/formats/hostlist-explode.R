{
  "version": 1,
  "execution": {
    "R_lite": [{"rank": "0-3", "children": {"core": "0-3"}}],
    "starttime": 0,
    "expiration": 0,
    "nodelist": ["n[0-99999999999]"]
  }
}
