# doctests of nxpy's modules share the test session's XLA client (8 host CPU devices)
from nxpy import pjrt

pjrt.devices()
