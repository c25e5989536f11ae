"""Where the offline demo model used to live; it is ``demo.hotel.offline.model`` now.

Kept so that existing imports (the CLI's announcement) keep working.
"""

from demo.hotel.offline.model import ANNOUNCEMENT, OfflineHotelModel, offline_provider

__all__ = ["ANNOUNCEMENT", "OfflineHotelModel", "offline_provider"]
