"""matplotlib backend of the playground: Agg drawing, and ``plt.show()`` sends the open figures
to the page as PNG images (a ``display`` event each) instead of opening windows.

Selected with ``MPLBACKEND=module://<this module>``, which the runner sets before the snippet
runs; matplotlib imports this module only when the snippet uses pyplot.
"""

from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

from . import display

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase


def show(*args, block=None, **kwargs):
    display.flush_figures()
