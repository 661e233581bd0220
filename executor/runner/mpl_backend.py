"""matplotlib backend of the playground: Agg drawing, and ``plt.show()`` sends the open figures
to the page as PNG images (a ``display`` event each) instead of opening windows.

Selected with ``MPLBACKEND=module://<this module>``, which the runner sets before the snippet
runs; matplotlib imports this module only when the snippet uses pyplot.
"""

from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

from . import display

class FigureManager(FigureManagerBase):
    """Remembers the snippet's line that made the figure (``plt.plot``, ``plt.figure``...): the
    Figures pane links each figure back to it."""

    def __init__(self, canvas, num):
        super().__init__(canvas, num)
        canvas.figure._playground_line = display.snippet_line()


class FigureCanvas(FigureCanvasAgg):
    # pyplot makes a figure's manager from its canvas class's manager_class.
    manager_class = FigureManager


def show(*args, block=None, **kwargs):
    display.flush_figures()
