{
  "version": 1,
  "execution": {
    "R_lite": [{"rank": "0-4294967296", "children": {"core": "0-3"}}],
    "starttime": 0,
    "expiration": 0,
    "nodelist": ["node[1-4]"]
  }
}
